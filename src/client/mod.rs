//! The real lock client, generic over the byte stream ([`Connect`]) and the [`Clock`], so
//! the code the simulator runs is the code that runs against a real redis-server.
//!
//! [`Connect`]: crate::platform::Connect
//! [`Clock`]: crate::platform::Clock

pub mod conn;
pub mod lock;
pub mod scripts;

pub use conn::{Conn, RequestError};
pub use lock::{Lease, Lock, LockError, LockOptions, Retry};
