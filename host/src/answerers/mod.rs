//! Answerers that ship with the host.

pub mod bridge;
pub mod script;
pub mod terminal;
