//! Answerers that ship with the host.

pub mod script;
