//! Holding a lock once acquired: the work run under the lease, the watchdog that renews
//! it every interval and tells the work when a renewal fails, and the watchdog left behind
//! after the work (a release that failed).

use rand::Rng;
use tokio::sync::watch;

use super::Lock;
use crate::client::error::LockError;
use crate::client::lease::{Held, Lease, LockGuard};
use crate::client::options::RenewalOnError;
use crate::client::steps::Step;
use crate::platform::{Clock, Connect};

impl<C: Connect, K: Clock, R: Rng + Send> Lock<C, K, R> {
    /// Runs `work` while holding `lease`: with a watchdog configured, renews the TTL every
    /// interval until `work` ends. When a renewal fails, the guard's [`LockGuard::lost`]
    /// fires, the work is awaited to its end (it should stop early), and the result is
    /// [`LockError::LockLost`]: the work ran partly without the lock. Without
    /// `signal_loss` (Redisson) the work is not told and its output is returned.
    pub async fn hold<T, F: Future<Output = T>>(
        &mut self,
        lease: &Lease,
        work: impl FnOnce(LockGuard) -> F,
    ) -> Result<T, LockError> {
        let (state_tx, state_rx) = watch::channel(Held::Valid(lease.clone()));
        let work = work(LockGuard::new(state_rx));
        let Some(interval_ms) = self.options.watchdog_interval_ms else {
            return Ok(work.await);
        };
        tokio::pin!(work);
        let signal_loss = self.options.signal_loss;
        let watchdog = self.renew_until_lost(lease.clone(), interval_ms, &state_tx);
        tokio::pin!(watchdog);
        tokio::select! {
            biased;
            output = &mut work => Ok(output),
            error = &mut watchdog => {
                if !signal_loss {
                    // Renewal stopped, and nobody tells the work (Redisson): it runs on unaware.
                    return Ok(work.await);
                }
                let reason = match error {
                    LockError::LockLost { reason } => reason,
                    other => other.to_string(),
                };
                state_tx.send_replace(Held::Lost(reason.clone()));
                work.await;
                Err(LockError::LockLost { reason })
            }
        }
    }

    /// Acquires `key`, runs `work` under [`Lock::hold`] and releases. A release that finds
    /// the key gone reports [`LockError::LockLost`]: the lock expired during the work.
    pub async fn with_lock<T, F: Future<Output = T>>(
        &mut self,
        key: &[u8],
        work: impl FnOnce(LockGuard) -> F,
    ) -> Result<T, LockError> {
        let lease = self.acquire(key).await?;
        let outcome = self.hold(&lease, work).await;
        let released = self.release(&lease).await;
        let output = outcome?;
        match released? {
            true => Ok(output),
            false => Err(LockError::LockLost {
                reason: "the key no longer held our value at release: it expired during the work".into(),
            }),
        }
    }

    /// A watchdog left behind after its work: renews `lease` every interval until a renewal
    /// finds the key gone or taken, and returns why it stopped. Nobody hears of its
    /// renewals. What a client whose release failed runs on with
    /// [`RenewalStops::OnSuccessfulRelease`](crate::client::RenewalStops::OnSuccessfulRelease).
    pub async fn keep_renewing(&mut self, lease: &Lease) -> LockError {
        let Some(interval_ms) = self.options.watchdog_interval_ms else {
            return LockError::LockLost {
                reason: "no watchdog is configured".into(),
            };
        };
        let (unheard, _) = watch::channel(Held::Valid(lease.clone()));
        self.renew_until_lost(lease.clone(), interval_ms, &unheard).await
    }

    /// The watchdog: every `interval_ms`, extends and publishes the renewed lease; rides out
    /// unanswered renewals while the lease lasts; returns the error that ended it.
    async fn renew_until_lost(
        &mut self,
        mut lease: Lease,
        interval_ms: u64,
        state: &watch::Sender<Held>,
    ) -> LockError {
        loop {
            self.clock.sleep_ms(interval_ms).await;
            self.steps.reached(Step::BeforeRenew).await;
            let extended = self.extend(&lease).await;
            if let Err(e) = &extended {
                self.observer.renewal_failed(&e.to_string());
            }
            match extended {
                Ok(renewed) => {
                    state.send_replace(Held::Valid(renewed.clone()));
                    lease = renewed;
                }
                Err(LockError::ExtendUnconfirmed { last_error, .. })
                    if self.options.renewal_on_error == RenewalOnError::GiveUp =>
                {
                    return LockError::LockLost {
                        reason: format!("the watchdog gave up after a renewal failed ({last_error})"),
                    };
                }
                // Nodes did not answer: the key may still be ours; try again next interval
                // if the lease outlives it.
                Err(LockError::ExtendUnconfirmed { .. })
                    if self.validity_clock_ms().saturating_add(interval_ms) < lease.valid_until_ms => {}
                Err(LockError::ExtendUnconfirmed { last_error, .. }) => {
                    return LockError::LockLost {
                        reason: format!("no renewal confirmed before the lease ran out ({last_error})"),
                    };
                }
                Err(e) => return e,
            }
        }
    }
}
