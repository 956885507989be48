#![no_main]

libfuzzer_sys::fuzz_target!(|case: ask_user_fuzz::AnswersCase| ask_user_fuzz::answers(case));
