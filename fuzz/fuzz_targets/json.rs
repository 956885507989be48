#![no_main]

libfuzzer_sys::fuzz_target!(|text: &str| ask_user_fuzz::json(text));
