//! Every input and output limit of the tool, spelled once in
//! [`ask_user_codes::limits`] (the host sizes what it takes by them too).

pub use ask_user_codes::limits::*;
