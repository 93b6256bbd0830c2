//! The lock client: one type for every algorithm, on one node or on N independent masters.
//!
//! An acquire sends the algorithm's commands (`ladder.rs`) to every node at once, each with
//! its own timeout, and counts the grants: one node needs one, Redlock a majority. It is
//! decided once every node answered, or as soon as a quorum voted, as the client's library
//! decides it (`fanout.rs`). Validity is the TTL minus the time the acquire took minus a
//! drift allowance, measured on the client's own clock; clients that skip that check
//! (redis-py) are a setting, not a second code path. Every failed attempt releases whatever
//! it took, and one retry loop serves all algorithms. The lease and the holder's guard are
//! in `lease.rs`; holding it (the work under the lease, the watchdog) in `lock/holding.rs`.

use std::sync::Arc;

use rand::{Rng, RngExt};

use super::conn::Conn;
use super::error::LockError;
use super::fanout::{FanOutWakers, Vote, fan_out};
use super::ladder;
use super::lease::Lease;
use super::observe::{Observe, Request, Tap, Unobserved};
use super::options::{AttemptCleanup, Fencing, LockOptions, OnReadonly, Protocol, Resolve, RetryToken};
use super::profiles::{self, Grant, python_redis_lock, redisson};
use super::steps::{NoSteps, Step, Steps};
use crate::platform::{Clock, Connect};

mod holding;

/// A lock client over one or more Redis nodes.
pub struct Lock<C: Connect, K: Clock, R: Rng> {
    nodes: Vec<Conn<C, K>>,
    /// What each fan-out to `nodes` polls its requests with (`fanout.rs`).
    fan_out_wakers: FanOutWakers,
    fence_counter: Option<Conn<C, K>>,
    clock: K,
    rng: R,
    options: LockOptions,
    steps: Arc<dyn Steps>,
    observer: Arc<dyn Observe>,
    /// Redisson's client id (`ServiceManager.id`, a random UUID): its hash field is this
    /// and the thread id. Empty for the other protocols.
    client_uuid: String,
    /// How long the last refused attempt was told the lock stays held (Redisson's `PTTL`).
    held_for_ms: Option<u64>,
    /// Redisson's subscription to the lock's channel while an acquire waits.
    subscription: Option<redisson::Subscription<C::Stream>>,
}

/// Random bytes in a token: as the Redis distlock page suggests (20 bytes from urandom).
const TOKEN_BYTES: usize = 20;

/// The value tiers 1–3 store: the same for every client, which is their defect.
const SHARED_VALUE: &str = "1";

impl<C: Connect, K: Clock, R: Rng + Send> Lock<C, K, R> {
    /// A client of the nodes reached through `connectors` (one for single-node locks,
    /// N for Redlock); it reads time from `clock` and draws tokens and jitter from `rng`.
    ///
    /// # Panics
    /// When `connectors` is empty: a lock needs at least one node.
    pub fn new(connectors: Vec<C>, clock: K, rng: R, options: LockOptions) -> Self {
        assert!(!connectors.is_empty(), "a lock needs at least one Redis node");
        let reconnect_on_readonly = options.on_readonly == OnReadonly::Reconnect;
        let nodes: Vec<_> = connectors
            .into_iter()
            .map(|c| {
                Conn::new(c, clock.clone(), options.request_timeout_ms)
                    .reconnect_on_readonly(reconnect_on_readonly)
            })
            .collect();
        let mut lock = Lock {
            fan_out_wakers: FanOutWakers::new(nodes.len()),
            nodes,
            fence_counter: None,
            clock,
            rng,
            options,
            steps: Arc::new(NoSteps),
            observer: Arc::new(Unobserved),
            client_uuid: String::new(),
            held_for_ms: None,
            subscription: None,
        };
        if lock.options.protocol == Protocol::Redisson {
            lock.client_uuid = lock.random_uuid();
        }
        lock
    }

    /// Calls `steps` at every [`Step`] (crash and pause points).
    pub fn with_steps(mut self, steps: Arc<dyn Steps>) -> Self {
        self.steps = steps;
        self
    }

    /// Tells `observer` every node's answer, why attempts and renewals failed, and every
    /// frame on the wire (the fencing counter's as node `nodes.len()`).
    pub fn with_observer(mut self, observer: Arc<dyn Observe>) -> Self {
        for (index, node) in self.nodes.iter_mut().chain(&mut self.fence_counter).enumerate() {
            node.tapped(Tap::new(observer.clone(), index));
        }
        self.observer = observer;
        self
    }

    /// The linearizable counter node that [`Fencing::Counter`] takes tokens from; its
    /// traffic is observed as node `nodes.len()`.
    pub fn with_fence_counter(mut self, connector: C) -> Self {
        let mut conn = Conn::new(connector, self.clock.clone(), self.options.request_timeout_ms);
        conn.tapped(Tap::new(self.observer.clone(), self.nodes.len()));
        self.fence_counter = Some(conn);
        self
    }

    /// The settings this client runs with.
    pub fn options(&self) -> &LockOptions {
        &self.options
    }

    /// Grants needed: a majority of the nodes (1 of 1, 3 of 5).
    pub fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    /// One attempt on every node, with a token of its own: `Ok(None)` when other clients
    /// hold the lock.
    pub async fn try_acquire(&mut self, key: &[u8]) -> Result<Option<Lease>, LockError> {
        let token = self.new_token();
        let acquire_started = self.validity_clock_ms();
        self.attempt(key, token, acquire_started).await
    }

    /// One attempt on every node to store `token`, for an acquire that began when the
    /// validity clock read `acquire_started`.
    async fn attempt(
        &mut self,
        key: &[u8],
        token: String,
        acquire_started: u64,
    ) -> Result<Option<Lease>, LockError> {
        self.steps.reached(Step::BeforeAcquire).await;
        let requested_at_ms = self.clock.monotonic_ms();
        let started = self.validity_clock_ms();
        let (options, steps, observer, token_ref) = (&self.options, &*self.steps, &*self.observer, &token);
        let wakers = &self.fan_out_wakers;
        let shared = &ladder::AttemptRequest::default();
        let requests = self.nodes.iter_mut().map(|node| {
            Some(async move {
                let answer = profiles::acquire_on(node, options, key, token_ref, steps, shared).await;
                let held_for_ms = match answer {
                    Ok(Grant::Held { for_ms }) => for_ms,
                    _ => None,
                };
                (answer.map(|grant| grant == Grant::Granted), held_for_ms)
            })
        });
        let votes = fan_out(
            wakers,
            requests.collect(),
            options.resolve,
            |(reply, _)| matches!(reply, Ok(true)),
            |i, answer| heard(observer, Request::Acquire, i, answer.map(|(reply, _)| reply)),
        )
        .await;
        self.held_for_ms = votes
            .iter()
            .filter_map(|vote| vote.answer().and_then(|(_, held_for_ms)| *held_for_ms))
            .min();
        // `None`: the attempt was decided without this node's answer.
        let replies: Vec<Option<Result<bool, LockError>>> = votes
            .into_iter()
            .map(|vote| match vote {
                Vote::Answered((reply, _)) => Some(reply),
                Vote::Pending | Vote::Skipped => None,
            })
            .collect();
        self.steps.reached(Step::AfterReplies).await;
        let elapsed_ms = self.validity_clock_ms().saturating_sub(started);
        let granted = replies.iter().filter(|r| matches!(r, Some(Ok(true)))).count();
        let validity_ms = self.validity_after(elapsed_ms);
        let valid = validity_ms > 0;
        if granted >= self.quorum() && valid {
            let valid_until_ms = if self.options.expiration_from_first_attempt {
                self.deadline(acquire_started, 0)
            } else {
                self.deadline(started, elapsed_ms)
            };
            return self
                .granted(key, token, requested_at_ms, started, valid_until_ms)
                .await
                .map(Some);
        }
        // Redlock step 5: free what we may have taken (a node that failed may have set the
        // key, and so may one whose answer the attempt did not wait for) so others need not
        // wait for the TTL. Tiers 1–3 cannot tell their key from another client's, so they
        // leave it. A failed release here changes nothing the caller could act on.
        let may_hold: Vec<bool> = replies
            .iter()
            .map(|reply| match self.options.attempt_cleanup {
                AttemptCleanup::EveryNode => !matches!(reply, Some(Ok(false))),
                AttemptCleanup::AllNodes => true,
                AttemptCleanup::GrantedNodes => matches!(reply, Some(Ok(true))),
                AttemptCleanup::AfterFinalFailure | AttemptCleanup::Never => false,
            })
            .collect();
        if self.options.algorithm.unique_token() && may_hold.contains(&true) {
            let _ = self.release_on_nodes(key, &token, &may_hold).await;
        }
        if granted >= self.quorum() {
            return Err(LockError::NoValidityLeft {
                elapsed_ms,
                ttl_ms: self.options.ttl_ms,
            });
        }
        self.refusal(replies).map(|()| None)
    }

    /// Tries up to `1 + retry.count` times, waiting in between as the protocol waits (the
    /// ladder sleeps `delay + U(0, jitter)`); the last attempt's error, or
    /// [`LockError::Contended`], when all fail.
    pub async fn acquire(&mut self, key: &[u8]) -> Result<Lease, LockError> {
        let attempts = self.options.retry.count.saturating_add(1);
        let mut last_error = None;
        // node-redlock draws one value per acquire and sends it on every retry.
        let shared_token = (self.options.retry_token != RetryToken::Fresh).then(|| self.new_token());
        if self.options.protocol == Protocol::PythonRedisLock
            && let Some(id) = &shared_token
        {
            python_redis_lock::check_not_held(&mut self.nodes[0], key, id).await?;
        }
        let mut last_token = String::new();
        let acquire_started = self.validity_clock_ms();
        for attempt in 1..=attempts {
            let token = shared_token.clone().unwrap_or_else(|| self.new_token());
            last_token.clone_from(&token);
            match self.attempt(key, token, acquire_started).await {
                Ok(Some(lease)) => {
                    self.stop_waiting().await;
                    return Ok(lease);
                }
                Ok(None) => {
                    self.observer
                        .attempt_failed(attempt, "the lock is held by another client");
                    last_error = None;
                }
                Err(e) => {
                    self.observer.attempt_failed(attempt, &e.to_string());
                    last_error = Some(e);
                }
            }
            if attempt < attempts {
                self.wait_before_retry(key).await;
            }
        }
        self.stop_waiting().await;
        if self.options.attempt_cleanup == AttemptCleanup::AfterFinalFailure
            && self.options.algorithm.unique_token()
        {
            let _ = self.release_everywhere(key, &last_token).await;
        }
        Err(last_error.unwrap_or(LockError::Contended { attempts }))
    }

    /// Between two attempts of one acquire: the ladder sleeps `delay + U(0, jitter)`;
    /// Redisson subscribes to the lock's channel after its first refusal and tries again at
    /// once, then waits for an unlock message at most the holder's `PTTL` (the whole `PTTL`
    /// when it could not subscribe); python-redis-lock blocks on its signal list.
    async fn wait_before_retry(&mut self, key: &[u8]) {
        let retry = &self.options.retry;
        match self.options.protocol {
            Protocol::Ladder => {
                self.clock.sleep_ms(retry.wait_ms(&mut self.rng)).await;
            }
            Protocol::Redisson => {
                // A hash without TTL (`PTTL` -1) is waited on for its message alone;
                // Redisson never leaves one, so a lease's length bounds that wait here.
                let wait_ms = self.held_for_ms.unwrap_or(self.options.ttl_ms).max(1);
                let clock = self.clock.clone();
                let Some(subscription) = &mut self.subscription else {
                    let opened = tokio::select! {
                        biased;
                        opened = redisson::Subscription::open(&self.nodes[0], key) => opened.ok(),
                        () = clock.sleep_ms(self.options.request_timeout_ms) => None,
                    };
                    match opened {
                        Some(subscription) => self.subscription = Some(subscription),
                        None => clock.sleep_ms(wait_ms).await,
                    }
                    return;
                };
                let message = tokio::select! {
                    biased;
                    message = subscription.unlocked() => Some(message),
                    () = clock.sleep_ms(wait_ms) => None,
                };
                if let Some(Err(_)) = message {
                    // The subscription's connection broke: subscribe again next time.
                    self.subscription = None;
                }
            }
            Protocol::PythonRedisLock => {
                python_redis_lock::wait_for_signal(&mut self.nodes[0], &self.options, key).await;
            }
        }
    }

    /// An acquire is over: Redisson unsubscribes from the lock's channel.
    async fn stop_waiting(&mut self) {
        if let Some(subscription) = self.subscription.take() {
            subscription.close().await;
        }
    }

    /// Releases on every node; `Ok(false)` when the key no longer held our value on enough
    /// nodes (it expired, and perhaps someone else holds the lock now).
    ///
    /// With [`LockOptions::release_retries`] a release no quorum confirmed is sent again,
    /// as the acquire's retries are.
    pub async fn release(&mut self, lease: &Lease) -> Result<bool, LockError> {
        self.steps.reached(Step::BeforeRelease).await;
        let attempts = match self.options.release_retries {
            true => self.options.retry.count.saturating_add(1),
            false => 1,
        };
        let mut replies = self.release_everywhere(&lease.key, &lease.token).await;
        for _ in 1..attempts {
            if self.confirmed(&replies) {
                break;
            }
            self.clock
                .sleep_ms(self.options.retry.wait_ms(&mut self.rng))
                .await;
            replies = self.release_everywhere(&lease.key, &lease.token).await;
        }
        self.steps.reached(Step::AfterRelease).await;
        if self.confirmed(&replies) {
            return Ok(true);
        }
        self.refusal(replies).map(|()| false)
    }

    /// Whether a quorum of nodes said yes.
    fn confirmed(&self, replies: &[Option<Result<bool, LockError>>]) -> bool {
        replies.iter().filter(|r| matches!(r, Some(Ok(true)))).count() >= self.quorum()
    }

    /// Resets the TTL on every node, if the key still holds our value on a majority and
    /// validity is left after the round trip. The renewed lease; [`LockError::LockLost`]
    /// when too many nodes no longer hold our value (or no validity is left);
    /// [`LockError::ExtendUnconfirmed`] when nodes did not answer, so the key may be ours.
    pub async fn extend(&mut self, lease: &Lease) -> Result<Lease, LockError> {
        let started = self.validity_clock_ms();
        let (ttl_ms, options, observer) = (self.options.ttl_ms, &self.options, &*self.observer);
        let requests = self.nodes.iter_mut().map(|node| {
            Some(async move { profiles::extend_on(node, options, &lease.key, &lease.token).await })
        });
        let replies = yes_or_no(
            &self.fan_out_wakers,
            requests.collect(),
            options.resolve,
            observer,
            Request::Extend,
        )
        .await;
        self.steps.reached(Step::AfterReplies).await;
        let elapsed_ms = self.validity_clock_ms().saturating_sub(started);
        let extended = replies.iter().filter(|r| matches!(r, Some(Ok(true)))).count();
        let validity_ms = self.validity_after(elapsed_ms);
        if extended >= self.quorum() && validity_ms > 0 {
            return Ok(Lease {
                valid_until_ms: self.deadline(started, elapsed_ms),
                ..lease.clone()
            });
        }
        let not_ours = replies.iter().filter(|r| matches!(r, Some(Ok(false)))).count();
        let last_error = replies.into_iter().flatten().filter_map(Result::err).last();
        if extended >= self.quorum() {
            return Err(LockError::LockLost {
                reason: format!("the extend took {elapsed_ms} ms of a {ttl_ms} ms TTL"),
            });
        }
        if not_ours > self.nodes.len() - self.quorum() {
            return Err(LockError::LockLost {
                reason: format!(
                    "the key held our value on {extended} of {} nodes, {} needed",
                    self.nodes.len(),
                    self.quorum()
                ),
            });
        }
        Err(LockError::ExtendUnconfirmed {
            extended,
            needed: self.quorum(),
            last_error: last_error.map_or_else(String::new, |e| e.to_string()),
        })
    }

    /// After a successful acquire: the step, the fencing token, the lease valid until
    /// `valid_until_ms`. A client that checks validity and finds none left once the token
    /// is fetched (it paused, the counter was slow) gives the lock back, as it would had
    /// the replies come that late.
    async fn granted(
        &mut self,
        key: &[u8],
        token: String,
        requested_at_ms: u64,
        started: u64,
        valid_until_ms: u64,
    ) -> Result<Lease, LockError> {
        self.steps.reached(Step::AfterAcquire).await;
        let fence = self.fence(key).await;
        let now = self.validity_clock_ms();
        let expired = self.options.validity_check && now >= valid_until_ms;
        let fence = match fence {
            Ok(_) if expired => Err(LockError::NoValidityLeft {
                elapsed_ms: now.saturating_sub(started),
                ttl_ms: self.options.ttl_ms,
            }),
            fence => fence,
        };
        let fence = match fence {
            Ok(fence) => fence,
            Err(e) => {
                // A holder without its token, or without time, must not work; give the
                // lock back.
                let _ = self.release_everywhere(key, &token).await;
                return Err(e);
            }
        };
        Ok(Lease {
            key: key.to_vec(),
            token,
            fence,
            requested_at_ms,
            valid_until_ms,
            validity_clock: self.options.validity_clock,
        })
    }

    /// The next fencing token, from the source the options name.
    async fn fence(&mut self, key: &[u8]) -> Result<Option<u64>, LockError> {
        let counter_key = [key, b":fence"].concat();
        let source = match self.options.fencing {
            Fencing::None => return Ok(None),
            Fencing::MasterIncr => &mut self.nodes[0],
            Fencing::Counter => self.fence_counter.as_mut().ok_or(LockError::NoFenceCounter)?,
        };
        ladder::next_fence(source, &counter_key).await.map(Some)
    }

    async fn release_everywhere(&mut self, key: &[u8], token: &str) -> Vec<Option<Result<bool, LockError>>> {
        let every_node = vec![true; self.nodes.len()];
        self.release_on_nodes(key, token, &every_node).await
    }

    /// Releases on the nodes `chosen` marks; the others count as not released, and those
    /// the release was decided without are `None`.
    async fn release_on_nodes(
        &mut self,
        key: &[u8],
        token: &str,
        chosen: &[bool],
    ) -> Vec<Option<Result<bool, LockError>>> {
        // Redisson names each unlock request (its latch key); nobody else draws one.
        let request_id = match self.options.protocol {
            Protocol::Redisson => self.random_hex::<{ redisson::REQUEST_ID_BYTES }>(),
            Protocol::Ladder | Protocol::PythonRedisLock => String::new(),
        };
        let (options, steps, observer, request_id) =
            (&self.options, &*self.steps, &*self.observer, &request_id);
        let shared = &ladder::AttemptRequest::default();
        let requests = self.nodes.iter_mut().zip(chosen).map(|(node, &chosen)| {
            chosen.then_some(async move {
                profiles::release_on(node, options, key, token, request_id, steps, shared).await
            })
        });
        yes_or_no(
            &self.fan_out_wakers,
            requests.collect(),
            options.resolve,
            observer,
            Request::Release,
        )
        .await
    }

    /// Why too few nodes said yes: `Ok` when every node answered (others hold the key),
    /// the node's own error on a single node, [`LockError::NoQuorum`] otherwise.
    fn refusal(&self, replies: Vec<Option<Result<bool, LockError>>>) -> Result<(), LockError> {
        let granted = replies.iter().filter(|r| matches!(r, Some(Ok(true)))).count();
        let mut errors: Vec<LockError> = replies.into_iter().flatten().filter_map(Result::err).collect();
        match errors.len() {
            0 => Ok(()),
            _ if self.nodes.len() == 1 => Err(errors.remove(0)),
            failed => Err(LockError::NoQuorum {
                granted,
                needed: self.quorum(),
                nodes: self.nodes.len(),
                failed,
                last_error: errors.pop().map_or_else(String::new, |e| e.to_string()),
            }),
        }
    }

    /// The validity the client believes it has after a request that took `elapsed_ms`:
    /// TTL − elapsed − drift allowance (negative when nothing is left). A client without
    /// the validity check never measures the round trip and trusts the reply for the whole
    /// TTL; a key without expiry is valid for ever.
    fn validity_after(&self, elapsed_ms: u64) -> i64 {
        let options = &self.options;
        if !options.expires() {
            return i64::MAX;
        }
        let elapsed_ms = if options.validity_check { elapsed_ms } else { 0 };
        options.ttl_ms as i64 - elapsed_ms as i64 - options.drift.allowance_ms(options.ttl_ms) as i64
    }

    /// The validity clock's reading at which a lease runs out whose request was sent when
    /// the clock read `sent_ms` and answered `elapsed_ms` later: sent + TTL − drift (a
    /// client without the validity check counts from the reply, as it never looked at the
    /// clock before sending).
    fn deadline(&self, sent_ms: u64, elapsed_ms: u64) -> u64 {
        match self.validity_after(elapsed_ms) {
            i64::MAX => Lease::NO_EXPIRY,
            ms => sent_ms.saturating_add(elapsed_ms).saturating_add_signed(ms),
        }
    }

    fn validity_clock_ms(&self) -> u64 {
        self.options.validity_clock.read(&self.clock)
    }

    /// The value an acquire stores: a random token (tiers 4, 5, Redlock), `1` (tiers 1–3),
    /// Redisson's `uuid:threadId` (the same for every acquire of this client: reentrancy),
    /// or a python-redis-lock id.
    fn new_token(&mut self) -> String {
        match self.options.protocol {
            Protocol::Redisson => return redisson::field(&self.client_uuid),
            Protocol::PythonRedisLock => return python_redis_lock::new_id(&mut self.rng),
            Protocol::Ladder => {}
        }
        if !self.options.algorithm.unique_token() {
            return SHARED_VALUE.to_string();
        }
        self.random_hex::<TOKEN_BYTES>()
    }

    /// `BYTES` random bytes, in hex.
    fn random_hex<const BYTES: usize>(&mut self) -> String {
        let mut drawn = [0u8; BYTES];
        self.rng.fill(&mut drawn);
        hex(&drawn)
    }

    /// A random (version 4) UUID, as `java.util.UUID.randomUUID()` prints one.
    fn random_uuid(&mut self) -> String {
        let mut bytes = [0u8; 16];
        self.rng.fill(&mut bytes);
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        let hex = hex(&bytes);
        format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )
    }
}

/// Tells `observer` node `i`'s answer to `request` as it came in, or, for `None`, that the
/// request was decided without it.
fn heard(observer: &dyn Observe, request: Request, i: usize, answer: Option<&Result<bool, LockError>>) {
    observer.answered(request, i, answer.unwrap_or(&Err(LockError::NotWaitedFor)));
}

/// Sends a yes-or-no request to the nodes (`None`: not asked) and decides it as `resolve`
/// says, telling `observer` each answer as it comes in. Each node's answer: `None` for one
/// the request was decided without; a node not asked counts as not done (`Some(Ok(false))`).
async fn yes_or_no(
    wakers: &FanOutWakers,
    requests: Vec<Option<impl Future<Output = Result<bool, LockError>>>>,
    resolve: Resolve,
    observer: &dyn Observe,
    request: Request,
) -> Vec<Option<Result<bool, LockError>>> {
    let granted = |reply: &Result<bool, LockError>| matches!(reply, Ok(true));
    let votes = fan_out(wakers, requests, resolve, granted, |i, answer| {
        heard(observer, request, i, answer)
    })
    .await;
    votes
        .into_iter()
        .map(|vote| match vote {
            Vote::Answered(reply) => Some(reply),
            Vote::Pending => None,
            Vote::Skipped => Some(Ok(false)),
        })
        .collect()
}

/// Bytes in lower-case hex, written two digits a byte into a buffer of the right size
/// (collecting `char`s cost ~670 instructions a token, issue 33).
fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = vec![0u8; bytes.len() * 2];
    for (digits, byte) in text.chunks_exact_mut(2).zip(bytes) {
        digits[0] = HEX[usize::from(byte >> 4)];
        digits[1] = HEX[usize::from(byte & 0xf)];
    }
    String::from_utf8(text).expect("hex digits are ASCII")
}
