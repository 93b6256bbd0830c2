//! Search and explain: from a violating run, the smallest schedule that still breaks the
//! lock the same way ([`shrink`], keeping its [`mechanism`]), told as numbered steps in
//! plain words ([`story`]); proptest strategies for whole scenarios ([`strategy`]) for
//! property-based checks, and the same search for users without Rust: scenario templates
//! ([`template`]) searched case by case ([`check`]).

pub mod check;
pub mod mechanism;
pub mod shrink;
pub mod story;
pub mod strategy;
pub mod template;
