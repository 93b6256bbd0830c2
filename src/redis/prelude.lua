-- Runs once when a node's interpreter starts, before any user script. Its argument is the
-- private bridge table to Rust (src/redis/lua.rs). It builds Redis 7.0's `redis` library
-- and the read-only global environment user scripts run in, as Redis's script_lua.c does.
local bridge = ...
local error, select, type, tostring = error, select, type, tostring
local lua_pcall, setmetatable = pcall, setmetatable
local globals = _G

-- Both reply helpers take exactly one string; anything else is itself an error reply.
local function single_string(...)
  local text = ...
  if select("#", ...) ~= 1 or type(text) ~= "string" then
    return nil
  end
  return text
end

local BAD_REPLY_ARGUMENTS = "ERR wrong number or type of arguments"

-- redis.call and redis.pcall are Rust functions, set by lua.rs once this chunk has run
-- (they reach the keyspace): Rust functions, not Lua ones, so that `return redis.call(...)` is no tail call
-- and an error still knows the script line, as Redis's C functions do.
local redis = {}
redis.error_reply = function(...)
  local text = single_string(...)
  if text == nil then
    return { err = BAD_REPLY_ARGUMENTS }
  end
  -- "-CODE message" keeps its code; a message without one gets "ERR".
  if text:sub(1, 1) == "-" then
    text = text:sub(2)
  end
  if not text:find(" ", 1, true) then
    text = "ERR " .. text
  end
  return { err = text }
end
redis.status_reply = function(...)
  local text = single_string(...)
  if text == nil then
    return { err = BAD_REPLY_ARGUMENTS }
  end
  return { ok = text }
end
redis.sha1hex = bridge.sha1hex
redis.acl_check_cmd = bridge.acl_check
-- Logging goes nowhere; effects replication is the only mode, as in Redis 7.0; RESP3
-- conversion of script replies is not modelled (setresp accepts and ignores it).
redis.log = function() end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.replicate_commands = function()
  return true
end
redis.set_repl = function() end
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.setresp = function() end
redis.REDIS_VERSION, redis.REDIS_VERSION_NUM = bridge.version, bridge.version_num

-- Redis 7.0 hands a script's own pcall the message of a Redis error, not the error object.
local redis_error_message = bridge.redis_error_message
local function pcall_results(ok, ...)
  if not ok then
    local reason = ...
    if type(reason) == "table" and type(reason.err) == "string" then
      return false, reason.err
    end
    local message = redis_error_message(reason)
    if message ~= nil then
      return false, message
    end
  end
  return ok, ...
end

-- Redis 7.0's Lua makes the globals and the libraries' tables read-only inside the VM
-- (`lua_enablereadonlytable`). Stock Lua 5.1 has no such tables, so scripts see each
-- library through a proxy whose writes fail with Redis's words; its metatable, as
-- getmetatable returns it, is itself such a proxy. `protected` remembers them, for
-- setmetatable.
local protected = {}
local function readonly_metatable()
  local metatable = { __newindex = function()
    error("Attempt to modify a readonly table", 2)
  end }
  metatable.__metatable = setmetatable({}, metatable)
  protected[metatable.__metatable] = true
  return metatable
end
local function readonly(library)
  local metatable = readonly_metatable()
  metatable.__index = library
  local proxy = setmetatable({}, metatable)
  protected[proxy] = true
  return proxy
end

bridge.redis = redis
globals.redis = readonly(redis)
globals.bit = readonly(bridge.bit)

-- cjson's and cmsgpack's functions are Rust functions that return `true, results...` or
-- `false, message` (lua_cjson.rs, lua_cmsgpack.rs); each is called through a Lua function
-- that raises the message as a string, as the C libraries' luaL_error does. Redis's message
-- has the caller's position (`user_script:1: `) when a script calls the function outright;
-- this one has none (as under pcall, where Redis has none either). `cjson.new` makes
-- another such table.
local function raised(ok, ...)
  if not ok then
    error((...), 0)
  end
  return ...
end
local function raising(library)
  local wrapped = {}
  for name, value in pairs(library) do
    if type(value) == "function" then
      wrapped[name] = function(...)
        return raised(value(...))
      end
    else
      wrapped[name] = value
    end
  end
  if library.new ~= nil then
    wrapped.new = function(...)
      return raising(raised(library.new(...)))
    end
  end
  return wrapped
end
globals.cjson = readonly(raising(bridge.cjson))
globals.cmsgpack = readonly(raising(bridge.cmsgpack))
globals.setmetatable = function(table, metatable)
  -- Redis raises this inside the C function, so the message names no position.
  if protected[table] then
    error("Attempt to modify a readonly table", 0)
  end
  return setmetatable(table, metatable)
end
globals.pcall = function(f, ...)
  return pcall_results(lua_pcall(f, ...))
end
-- No file system, no output, no environment tricks: what Redis 7.0 removes.
for _, name in ipairs({ "dofile", "loadfile", "print", "getfenv", "setfenv", "newproxy" }) do
  globals[name] = nil
end
math.random, math.randomseed = bridge.random, bridge.randomseed
-- Redis's Lua parses every chunk as text, so precompiled bytecode (string.dump's output)
-- does not load: loadstring returns nil and the text parser's complaint about the first
-- byte, under the chunk's own name (got here from a failed parse under that name).
local lua_loadstring = loadstring
globals.loadstring = function(chunk, name)
  if type(chunk) == "string" and chunk:byte(1) == 27 then
    local _, message = lua_loadstring("?", name or chunk)
    return nil, (message:gsub("'%?'$", "'char(27)'"))
  end
  return lua_loadstring(chunk, name)
end

-- User scripts run in this environment: reads of missing globals and all writes fail, with
-- Redis's words, at the script's own line (level 2). A read goes from the empty sandbox to
-- the globals by a table `__index` (no Lua call, as every script reads `redis`, KEYS and
-- ARGV), and only a name the globals lack reaches their own metatable's function, as in
-- Redis, whose globals carry that metatable too (`luaSetErrorMetatable`).
setmetatable(globals, { __index = function(_, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end })
local sandbox_metatable = readonly_metatable()
sandbox_metatable.__index = globals
local sandbox = setmetatable({}, sandbox_metatable)
protected[sandbox] = true
globals._G = sandbox
bridge.sandbox = sandbox
