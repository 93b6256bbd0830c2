//! Search and explain: from a violating run, the smallest schedule that still breaks the
//! lock ([`shrink`]), told as numbered steps in plain words ([`story`]).

pub mod shrink;
pub mod story;
