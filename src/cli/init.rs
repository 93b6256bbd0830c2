//! `init`: a starter set of scenarios for the user's own lock setup, written into a
//! directory with its schema and a README, that runs as written from anywhere. What the
//! files are is scenario/starter.rs; how their expectations are measured,
//! campaign/starter.rs; here are the arguments, the files on disk and the exit codes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use locksim::campaign::starter::measure;
use locksim::scenario::limits::parse_duration;
use locksim::scenario::starter::{STARTER_TTL_MS, Setup, StarterTopology, human, starter_set, starter_text};
use locksim::scenario::{SchemaKind, json_schema_text};

use super::{EXIT_HARNESS, invalid};

/// `locksim init [DIR] [--topology T] [--masters N] [--ttl D] [--profile P] [--fencing F]
/// [--command CMD] [--seeds N] [--force]`.
#[derive(clap::Args)]
pub struct InitArgs {
    /// The directory to write into (made if missing).
    #[arg(default_value = "locksim-scenarios")]
    dir: PathBuf,
    /// The Redis deployment: single, replicated (a master, two replicas and a failover
    /// controller), sentinel (the same with three Sentinels) or redlock.
    #[arg(long, default_value = "single", value_parser = topology)]
    topology: StarterTopology,
    /// Redlock's independent masters (--topology redlock; default 5).
    #[arg(long)]
    masters: Option<u32>,
    /// The lock's time to live: `10s`, `1.5s`, `2000` (ms); 1 s to 5 min.
    #[arg(long, default_value = "10s", value_parser = ttl)]
    ttl: u64,
    /// The lock library whose defaults to copy: redisson, redsync, node-redlock, redis-py
    /// or python-redis-lock (default: locksim's own client, the distlock page's).
    #[arg(long)]
    profile: Option<String>,
    /// Fencing tokens checked by the resource: none, master-incr (INCR on the lock's
    /// master) or counter (a separate counter node).
    #[arg(long)]
    fencing: Option<String>,
    /// Your own live worker, one shell command each client runs (`run --live` starts it
    /// with `sh -c` in DIR); see `locksim run --help` for what it is told.
    #[arg(long, value_name = "CMD")]
    command: Option<String>,
    /// Seeds each file asks for (and its expectations are measured over).
    #[arg(long, default_value_t = 20, value_parser = super::at_least_one::<u64>)]
    seeds: u64,
    /// Seeds measured in parallel (default: the number of cores).
    #[arg(long, value_parser = super::at_least_one::<usize>)]
    jobs: Option<usize>,
    /// Replace files DIR already has.
    #[arg(long)]
    force: bool,
}

/// `--topology`: one of the names init knows.
fn topology(text: &str) -> Result<StarterTopology, String> {
    StarterTopology::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = StarterTopology::ALL.iter().map(|(name, _)| *name).collect();
        format!("expected one of: {}", names.join(", "))
    })
}

/// `--ttl`: a duration in the range a starter set takes.
fn ttl(text: &str) -> Result<u64, String> {
    let (ms, _) = parse_duration(text)?;
    let [min, max] = STARTER_TTL_MS;
    match u64::try_from(ms) {
        Ok(ms) if (min..=max).contains(&ms) => Ok(ms),
        _ => Err(format!(
            "{ms} ms is out of range: must be {min}..={max} ms (1 s to 5 min)"
        )),
    }
}

/// The flag a scenario field came from, for the loader's errors about a setup.
fn flag_of(field: &str) -> &str {
    match field {
        "lock.profile" => "--profile",
        "lock.fencing" => "--fencing",
        "lock.ttl_ms" => "--ttl",
        "topology.masters" => "--masters",
        "clients.command" => "--command",
        other => other,
    }
}

/// Writes the starter set; 2 on a bad setup or when files would be overwritten, 3 when a
/// measuring run failed.
pub fn init(args: InitArgs) -> ExitCode {
    if args.masters.is_some() && args.topology != StarterTopology::Redlock {
        return invalid("--masters is for --topology redlock");
    }
    let setup = Setup {
        topology: args.topology,
        masters: args.masters.unwrap_or(5),
        ttl_ms: args.ttl,
        profile: args.profile.clone(),
        fencing: args.fencing.clone(),
        command: args.command.clone(),
        seeds: args.seeds,
    };
    let files = match starter_set(&setup) {
        Ok(files) => files,
        Err((field, reason)) => return invalid(format!("{}: {reason}", flag_of(&field))),
    };
    let schema_file = SchemaKind::Scenario.file_name();
    let mut names: Vec<&str> = files.iter().map(|f| f.file_name.as_str()).collect();
    names.extend([schema_file, "README.md"]);
    let existing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| args.dir.join(name).exists())
        .collect();
    if !existing.is_empty() && !args.force {
        return invalid(format!(
            "{}: would overwrite {} (--force replaces them)",
            args.dir.display(),
            existing.join(", ")
        ));
    }
    let jobs = super::jobs_or_all_cores(args.jobs);
    let mut written = Vec::new();
    for file in &files {
        eprintln!("measuring {} over {} seeds", file.file_name, setup.seeds);
        match measure(file, jobs) {
            Ok(scenario) => {
                if scenario["expect"]
                    .as_object()
                    .is_none_or(|expect| expect.is_empty())
                {
                    eprintln!(
                        "warning: {}: its seeds showed nothing to claim (its description says why), so `locksim run` will call it unchecked; more --seeds or another --ttl may show something",
                        file.file_name
                    );
                }
                written.push((file.file_name.clone(), scenario));
            }
            Err(e) => {
                eprintln!("error: a run failed while measuring {e}");
                return ExitCode::from(EXIT_HARNESS);
            }
        }
    }
    let mut contents: Vec<(String, String)> = written
        .iter()
        .map(|(name, scenario)| (name.clone(), starter_text(scenario)))
        .collect();
    contents.push((schema_file.into(), json_schema_text(SchemaKind::Scenario)));
    contents.push(("README.md".into(), readme(&args, &written)));
    if let Err(e) = write_all(&args.dir, &contents) {
        return invalid(e);
    }
    for (name, scenario) in &written {
        super::emit(format_args!(
            "wrote {}: {}",
            args.dir.join(name).display(),
            claims(scenario)
        ));
    }
    super::emit(format_args!(
        "next: locksim run {}{}",
        if args.command.is_some() { "--live " } else { "" },
        args.dir.display()
    ));
    ExitCode::SUCCESS
}

/// Writes every `(name, text)` into `dir`, making it first.
fn write_all(dir: &Path, contents: &[(String, String)]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot make the directory: {e}", dir.display()))?;
    for (name, text) in contents {
        let file = dir.join(name);
        std::fs::write(&file, text).map_err(|e| format!("{}: cannot write: {e}", file.display()))?;
    }
    Ok(())
}

/// A scenario's expectations in words (`mutual_exclusion violated, resource_safety holds`).
fn claims(scenario: &serde_json::Value) -> String {
    let expect = scenario["expect"].as_object();
    let claims: Vec<String> = expect
        .into_iter()
        .flatten()
        .map(|(checker, verdict)| format!("{checker} {}", verdict.as_str().unwrap_or("")))
        .collect();
    match claims.is_empty() {
        true => "nothing claimed (see its description)".into(),
        false => claims.join(", "),
    }
}

/// The README of the starter directory: the setup, how to run the files, what each tests.
fn readme(args: &InitArgs, written: &[(String, serde_json::Value)]) -> String {
    let mut command = format!("locksim init DIR --topology {}", args.topology.name());
    if let Some(masters) = args.masters {
        command += &format!(" --masters {masters}");
    }
    command += &format!(" --ttl {}", human(args.ttl).replace(' ', ""));
    for (flag, value) in [("--profile", &args.profile), ("--fencing", &args.fencing)] {
        if let Some(value) = value {
            command += &format!(" {flag} {value}");
        }
    }
    if let Some(worker) = &args.command {
        command += &format!(" --command '{worker}'");
    }
    command += &format!(" --seeds {}", args.seeds);
    let live = args.command.is_some();
    let run = if live {
        "locksim run --live ."
    } else {
        "locksim run ."
    };
    let mut text = format!(
        "# Lock scenarios for your setup\n\n\
         Written by `{command}`. Each file is a scenario for `locksim run`: a baseline\n\
         without faults and one file per fault, each with the verdicts (`expect`) its seeds\n\
         showed when `locksim init` ran them, and a description saying what it tests and\n\
         what a violation means.\n\n\
         ## Run them\n\n\
         From this directory (the files name no other path, so they run from anywhere):\n\n\
         ```sh\n{run}\n```\n\n\
         Exit 0 when every expectation is met, 1 when one is not, 2 on a bad file, 3 when a\n\
         run failed: a CI step can gate on it as it is.\n"
    );
    if live {
        text += "\nThe files name your worker (`clients.command`), so they run live (`--live`: real\n\
                 processes, Redis nodes on loopback ports, faults through TCP proxies and signals);\n\
                 `locksim run --simulated-client .` runs locksim's own client with the same lock\n\
                 settings in the simulator. The expectations were measured with locksim's\n\
                 simulated client and your profile's settings: a live verdict that differs says\n\
                 your library does something the profile does not. Live mode does not judge\n\
                 `validity`.\n";
    }
    text += "\nUnder a row with a violation, `replay: locksim replay FILE --seed S` names a seed\n\
             that shows it; add `--story` to have it told step by step:\n\n\
             ```sh\nlocksim replay pause-holder.json --seed 0 --story\n```\n\n\
             Editors validate and complete the files: each names `scenario.schema.json`\n\
             (`locksim schema` writes it) in `\"$schema\"`. The format is docs/scenarios.md\n\
             in locksim's repository.\n\n\
             ## The files\n\n\
             | file | expects |\n|---|---|\n";
    for (name, scenario) in written {
        text += &format!("| `{name}` | {} |\n", claims(scenario));
    }
    text
}
