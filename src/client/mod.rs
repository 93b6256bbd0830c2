//! The real lock client, generic over the byte stream ([`Connect`]) and the [`Clock`], so
//! the code the simulator runs is the code that runs against a real redis-server.
//!
//! [`Lock`] runs every algorithm of the ladder and Redlock ([`Algorithm`]), with retry,
//! watchdog renewal ([`Lock::hold`], [`Lock::with_lock`]), fencing tokens and the client
//! profiles ([`Profile`]), some speaking their library's own protocol ([`Protocol`],
//! `profiles/`); [`Steps`] lets a simulation crash or pause it between commands,
//! and [`Observe`] hears every node's answer.
//!
//! [`Connect`]: crate::platform::Connect
//! [`Clock`]: crate::platform::Clock

pub mod conn;
pub mod error;
mod fanout;
mod ladder;
pub mod lease;
pub mod lock;
pub mod observe;
pub mod options;
mod profile;
pub mod profiles;
pub mod scripts;
pub mod steps;

pub use conn::Conn;
pub use error::{LockError, RequestError};
pub use lease::{Held, Lease, LockGuard};
pub use lock::Lock;
pub use observe::{Observe, Request, Tap, Traffic, Unobserved};
pub use options::Protocol;
pub use options::{
    Algorithm, AttemptCleanup, Drift, ExtendMode, Fencing, LockOptions, OnReadonly, RenewalOnError,
    RenewalStops, Resolve, Retry, RetryToken, ValidityClock, WaitFor, WaitReplicas,
};
pub use profile::{Profile, ProfileDefaults};
pub use steps::{NoSteps, Step, Steps, go_on};
