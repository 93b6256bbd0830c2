//! `write_before_replication`: faults that strike when a master has applied a write that
//! sets the lock key (a grant or a renewal) and none of its replicas has it yet — the window of the distlock page's
//! failover race, hit exactly instead of by luck.
//!
//! Each Redis node's write hook checks for an armed trap. When one is armed, the node holds
//! its replication stream back behind a closed [`Gate`] and springs the trap; the injector
//! applies the fault and then opens the gate. A master the fault killed takes the held
//! write with it, as a real master that died before streaming it does.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::redis::node::{Gate, WriteHook};

/// An armed trap: told which master wrote, and the gate holding its stream.
type Trap = oneshot::Sender<(String, Gate)>;

/// Traps armed by `write_before_replication` faults, shared by the injector and every
/// Redis node.
#[derive(Clone, Default)]
pub struct WriteTraps {
    armed: Arc<Mutex<Vec<Trap>>>,
}

impl WriteTraps {
    /// Arms a trap and waits for a master's write of the lock key: returns the master
    /// and the gate holding its stream to the replicas.
    pub async fn spring(&self) -> (String, Gate) {
        let (sprung, caught) = oneshot::channel();
        self.armed.lock().expect("traps lock poisoned").push(sprung);
        match caught.await {
            Ok(caught) => caught,
            // The traps live as long as the world; a dropped trap means the run is over.
            Err(_) => std::future::pending().await,
        }
    }

    /// The write hook of Redis node `name`, watching the lock's Redis key `key`.
    pub fn hook(&self, name: &str, key: &[u8]) -> WriteHook {
        let (traps, name, key) = (self.clone(), name.to_string(), key.to_vec());
        WriteHook(Arc::new(move |keys, db| {
            // A grant or a renewal leaves the key in place; a release deletes it.
            if !keys.contains(key.as_slice()) || db.raw(&key).is_none() {
                return None;
            }
            let sprung = traps.armed.lock().expect("traps lock poisoned").pop()?;
            let gate = Gate::default();
            let _ = sprung.send((name.clone(), gate.clone()));
            Some(gate)
        }))
    }
}
