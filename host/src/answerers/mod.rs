//! Answerers that ship with the host.

pub mod bridge;
pub mod remote;
pub mod script;
pub mod terminal;
pub mod web;
