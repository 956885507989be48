//! Answerers that ship with the host, and the registry of answerer kinds a
//! configuration file can name.
//!
//! A kind is one file: its answerer, its own config table and its start-up
//! (an [`AnswererKind`]), and one line in [`Kinds::builtin`] (or, for a kind
//! of another module, in [`crate::config::kinds`]).

pub mod bridge;
mod kind;
pub mod script;
pub mod terminal;
pub mod web;

pub use kind::{
    AnswererKind, ConfigProblem, KindTable, Kinds, MAX_DURATION, Page, Setup, Started, duration,
    race, ready,
};
