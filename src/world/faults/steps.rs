//! Crash points: faults that hit a client exactly between two steps of the lock
//! algorithm (after `SETNX`, between `GET` and `DEL`, …), where the ladder's defects live.
//!
//! A `crash_point` fault arms a trap for a step; every client's [`Steps`] hook checks the
//! traps when it reaches a step. The first client to reach an armed step springs it: it
//! stops there, the injector applies the fault to it (a crash, a pause, …) and then lets
//! it go on, if it is still alive.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio::sync::oneshot;

use crate::client::{Step, Steps, go_on};

/// A client stopped at a step; dropping this lets it go on.
pub type Held = oneshot::Sender<()>;

/// The traps armed by crash-point faults, shared by the injector and every client.
#[derive(Clone, Default)]
pub struct StepTraps(Arc<Mutex<Vec<Trap>>>);

struct Trap {
    step: Step,
    /// Only these clients spring it; `None`: any client.
    clients: Option<Vec<String>>,
    sprung: oneshot::Sender<(String, Held)>,
}

impl StepTraps {
    /// Arms a trap and waits until a client springs it: returns that client, held at the step.
    pub async fn spring(&self, step: Step, clients: Option<Vec<String>>) -> (String, Held) {
        let (sprung, caught) = oneshot::channel();
        self.0.lock().expect("traps lock poisoned").push(Trap {
            step,
            clients,
            sprung,
        });
        match caught.await {
            Ok(caught) => caught,
            // The traps live as long as the world; a dropped trap means the run is over.
            Err(_) => std::future::pending().await,
        }
    }

    /// The hook for one client process.
    pub fn hook(&self, client: &str) -> Arc<dyn Steps> {
        Arc::new(ClientSteps {
            traps: self.clone(),
            client: client.to_string(),
        })
    }
}

/// The step hook of one client: stops at a step when a trap for it is armed.
struct ClientSteps {
    traps: StepTraps,
    client: String,
}

impl Steps for ClientSteps {
    fn reached(&self, step: Step) -> BoxFuture<'_, ()> {
        let trap = {
            let mut traps = self.traps.0.lock().expect("traps lock poisoned");
            let hit = traps.iter().position(|trap| {
                trap.step == step
                    && trap
                        .clients
                        .as_ref()
                        .is_none_or(|clients| clients.contains(&self.client))
            });
            hit.map(|i| traps.remove(i))
        };
        let Some(trap) = trap else {
            return go_on();
        };
        let (held, released) = oneshot::channel();
        let _ = trap.sprung.send((self.client.clone(), held));
        Box::pin(async move {
            let _ = released.await;
        })
    }
}
