use super::*;
use ask_user_seam::question::{Accepts, QuestionOption};

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn type_text(prompt: &mut Prompt, text: &str) {
    for c in text.chars() {
        assert!(matches!(
            prompt.on_event(&key(KeyCode::Char(c))),
            Step::Continue
        ));
    }
}

fn choice(id: &str, labels: &[&str], multi: bool) -> Question {
    let mut q = Question::new(id, format!("{id}?"));
    q.options = Some(labels.iter().map(|l| QuestionOption::new(*l)).collect());
    q.multi_select = Some(multi);
    q
}

fn sent(step: Step) -> Vec<Answer> {
    match step {
        Step::Send(answers) => answers,
        Step::Continue => panic!("still asking"),
        Step::Dismiss => panic!("dismissed"),
    }
}

#[test]
fn a_digit_picks_and_the_review_sends() {
    let questions = [
        choice("a", &["X", "Y"], false),
        choice("b", &["P", "Q"], false),
    ];
    let mut prompt = Prompt::new(&questions);
    prompt.on_event(&key(KeyCode::Char('2')));
    assert_eq!(prompt.index, 1, "a pick moves to the next question");
    prompt.on_event(&key(KeyCode::Down));
    prompt.on_event(&key(KeyCode::Enter));
    assert!(matches!(prompt.screen, Screen::Review));
    let answers = sent(prompt.on_event(&key(KeyCode::Enter)));
    assert_eq!(answers[0].selected, ["Y"]);
    assert_eq!(answers[1].selected, ["Q"]);
}

#[test]
fn own_words_replace_a_single_choice_and_add_to_a_multi_choice() {
    let questions = [
        choice("one", &["X", "Y"], false),
        choice("many", &["P", "Q", "R"], true),
    ];
    let mut prompt = Prompt::new(&questions);
    prompt.on_event(&key(KeyCode::Char('1')));
    prompt.on_event(&key(KeyCode::Left));
    prompt.on_event(&key(KeyCode::Char('3'))); // "Type your own answer"
    type_text(&mut prompt, "  neither  ");
    prompt.on_event(&key(KeyCode::Enter));
    prompt.on_event(&key(KeyCode::Char(' '))); // ticks P
    prompt.on_event(&key(KeyCode::Char('3'))); // ticks R
    prompt.on_event(&key(KeyCode::Char('3'))); // unticks R
    prompt.on_event(&key(KeyCode::Char('2'))); // ticks Q
    prompt.on_event(&key(KeyCode::Char('4'))); // "Type your own answer"
    type_text(&mut prompt, "and S");
    prompt.on_event(&key(KeyCode::Enter));
    let answers = sent(prompt.on_event(&key(KeyCode::Enter)));
    assert_eq!(
        (answers[0].selected.len(), answers[0].custom.as_deref()),
        (0, Some("neither"))
    );
    assert_eq!(answers[1].selected, ["P", "Q"]);
    assert_eq!(answers[1].custom.as_deref(), Some("and S"));
}

/// A question that takes a note (Codex's): own words go beside the
/// choice, whichever comes first, and the row says "Add a note".
#[test]
fn a_note_goes_beside_a_single_choice_where_a_question_takes_one() {
    let mut noted = choice("one", &["X", "Y"], false);
    noted.accepts = Some(Accepts {
        note: true,
        ..Accepts::default()
    });
    let questions = [noted.clone(), noted];
    let mut prompt = Prompt::new(&questions);
    prompt.on_event(&key(KeyCode::Char('2'))); // picks Y, on to the next
    prompt.on_event(&key(KeyCode::Left));
    prompt.on_event(&key(KeyCode::Char('3'))); // "Add a note"
    type_text(&mut prompt, "after 5pm");
    prompt.on_event(&key(KeyCode::Enter));
    // The next: the note first (on to the review), then back to choose.
    prompt.on_event(&key(KeyCode::Char('3')));
    type_text(&mut prompt, "first");
    prompt.on_event(&key(KeyCode::Enter));
    prompt.on_event(&key(KeyCode::Left));
    prompt.on_event(&key(KeyCode::Char('1')));
    assert!(matches!(prompt.screen, Screen::Review));
    let answers = sent(prompt.on_event(&key(KeyCode::Enter)));
    assert_eq!(answers[0].selected, ["Y"]);
    assert_eq!(answers[0].custom.as_deref(), Some("after 5pm"));
    assert_eq!(answers[1].selected, ["X"]);
    assert_eq!(answers[1].custom.as_deref(), Some("first"));
}

/// A field of another server's form: a required choice shows neither
/// "Type your own answer" nor "Skip", and a number field takes only a
/// number; what does not fit is not taken, says why, and stays.
#[test]
fn a_question_offers_and_takes_only_what_it_accepts() {
    use ask_user_seam::question::OwnWords;
    let mut target = choice("target", &["Staging", "Production"], false);
    target.accepts = Some(Accepts {
        required: true,
        own_words: OwnWords::None,
        ..Accepts::default()
    });
    let mut replicas = Question::new("replicas", "How many?");
    replicas.accepts = Some(Accepts {
        required: false,
        own_words: OwnWords::Number {
            integer: true,
            minimum: Some(1.0),
            maximum: None,
        },
        ..Accepts::default()
    });
    let questions = [target, replicas];
    let mut prompt = Prompt::new(&questions);
    assert_eq!(prompt.rows(), 2, "the options only");
    assert_eq!(prompt.row(2), Row::Skip);
    // A paste on the options starts no own words here.
    prompt.on_event(&Event::Paste("somewhere".into()));
    assert!(matches!(prompt.screen, Screen::Choosing));
    prompt.on_event(&key(KeyCode::Tab));
    type_text(&mut prompt, "three");
    prompt.on_event(&key(KeyCode::Enter));
    assert_eq!(
        prompt.problem.as_deref(),
        Some("it takes a whole number, not \"three\"")
    );
    assert!(matches!(&prompt.screen, Screen::Typing(input) if input.value() == "three"));
    prompt.on_event(&key(KeyCode::Backspace)); // the problem goes with the next key
    assert!(prompt.problem.is_none());
    for _ in 0..4 {
        prompt.on_event(&key(KeyCode::Backspace));
    }
    type_text(&mut prompt, "3");
    prompt.on_event(&key(KeyCode::Enter));
    assert!(matches!(prompt.screen, Screen::Review));
    // The required choice was passed over: sending brings it back.
    assert!(matches!(
        prompt.on_event(&key(KeyCode::Enter)),
        Step::Continue
    ));
    assert_eq!(
        (prompt.index, prompt.problem.as_deref()),
        (0, Some("it must be answered"))
    );
    prompt.on_event(&key(KeyCode::Char('2')));
    let answers = sent(prompt.on_event(&key(KeyCode::Enter)));
    assert_eq!(answers[0].selected, ["Production"]);
    assert_eq!(answers[1].custom.as_deref(), Some("3"));
}

#[test]
fn skip_clears_and_esc_or_ctrl_c_dismisses_everywhere() {
    let questions = [
        choice("a", &["X"], false),
        Question::new("free", "Anything?"),
    ];
    let mut prompt = Prompt::new(&questions);
    prompt.on_event(&key(KeyCode::Char('3'))); // "Skip this question"
    assert!(
        matches!(prompt.screen, Screen::Typing(_)),
        "free text types at once"
    );
    prompt.on_event(&key(KeyCode::Enter)); // empty: skipped
    let answers = sent(prompt.on_event(&key(KeyCode::Enter)));
    assert_eq!(answers[0], Answer::skipped("a"));
    assert_eq!(answers[1], Answer::skipped("free"));

    // Esc asks first: a second dismisses, any other key goes on.
    let mut prompt = Prompt::new(&questions);
    assert!(matches!(
        prompt.on_event(&key(KeyCode::Esc)),
        Step::Continue
    ));
    assert!(prompt.dismissing);
    prompt.on_event(&key(KeyCode::Down));
    assert!(!prompt.dismissing, "another key goes on");
    prompt.on_event(&key(KeyCode::Esc));
    assert!(matches!(prompt.on_event(&key(KeyCode::Esc)), Step::Dismiss));
    // Typing own words, Esc leaves the field and keeps the words.
    let mut prompt = Prompt::new(&questions);
    prompt.on_event(&key(KeyCode::Char('2')));
    type_text(&mut prompt, "later");
    assert!(matches!(
        prompt.on_event(&key(KeyCode::Esc)),
        Step::Continue
    ));
    assert!(matches!(prompt.screen, Screen::Choosing) && !prompt.dismissing);
    assert_eq!(prompt.drafts[0].custom.as_deref(), Some("later"));
    // Shift+Tab goes back too.
    let mut prompt = Prompt::new(&questions);
    prompt.on_event(&key(KeyCode::Char('2'))); // "Type your own answer"
    assert!(matches!(prompt.screen, Screen::Typing(_)));
    prompt.on_event(&key(KeyCode::BackTab));
    assert!(
        matches!(prompt.screen, Screen::Choosing),
        "back to the options"
    );
    let mut prompt = Prompt::new(&questions);
    prompt.on_event(&key(KeyCode::Char('1'))); // X; on to the free-text question
    assert_eq!(prompt.index, 1);
    prompt.on_event(&key(KeyCode::BackTab));
    assert_eq!(prompt.index, 0, "back to the previous question");
    // On a question that is only text, Esc asks to dismiss, as anywhere.
    prompt.on_event(&key(KeyCode::Char('1')));
    assert!(matches!(prompt.screen, Screen::Typing(_)));
    prompt.on_event(&key(KeyCode::Esc));
    assert!(matches!(prompt.on_event(&key(KeyCode::Esc)), Step::Dismiss));
    let mut prompt = Prompt::new(&questions);
    let ctrl_c = Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(matches!(prompt.on_event(&ctrl_c), Step::Dismiss));
}

#[test]
fn a_paste_is_text_on_the_options_and_where_the_cursor_is() {
    let questions = [choice("a", &["X", "Y"], false)];
    let mut prompt = Prompt::new(&questions);
    prompt.on_event(&Event::Paste("1 2\r\nthree".into()));
    assert!(
        matches!(prompt.screen, Screen::Typing(_)),
        "no digit picked"
    );
    prompt.on_event(&key(KeyCode::Home));
    prompt.on_event(&Event::Paste("zero\r".into()));
    prompt.on_event(&key(KeyCode::Enter));
    assert!(matches!(prompt.screen, Screen::Review));
    prompt.on_event(&Event::Paste("\r".into()));
    let answers = sent(prompt.on_event(&key(KeyCode::Enter)));
    assert_eq!(answers[0].custom.as_deref(), Some("zero\n1 2\nthree"));
    assert!(answers[0].selected.is_empty());
}

#[test]
fn changing_one_answer_from_the_review_returns_to_it() {
    let questions = [
        choice("a", &["X", "Y"], false),
        choice("b", &["P", "Q"], false),
        choice("c", &["R", "S"], false),
    ];
    let mut prompt = Prompt::new(&questions);
    for pick in ['1', '1', '1'] {
        prompt.on_event(&key(KeyCode::Char(pick)));
    }
    assert!(matches!(prompt.screen, Screen::Review));
    prompt.on_event(&key(KeyCode::Char('1')));
    assert_eq!(prompt.index, 0, "the first answer is open again");
    prompt.on_event(&key(KeyCode::Char('2')));
    assert!(
        matches!(prompt.screen, Screen::Review),
        "back to the review, not through b and c again"
    );
    let answers = sent(prompt.on_event(&key(KeyCode::Enter)));
    assert_eq!(answers[0].selected, ["Y"]);
    assert_eq!(answers[2].selected, ["R"]);
}

#[test]
fn alt_enter_starts_a_new_line_in_own_words() {
    let questions = [Question::new("why", "Why?")];
    let mut prompt = Prompt::new(&questions);
    type_text(&mut prompt, "one");
    prompt.on_event(&Event::Key(KeyEvent::new(
        KeyCode::Enter,
        KeyModifiers::ALT,
    )));
    type_text(&mut prompt, "two");
    prompt.on_event(&key(KeyCode::Enter));
    let answers = sent(prompt.on_event(&key(KeyCode::Enter)));
    assert_eq!(answers[0].custom.as_deref(), Some("one\ntwo"));
}

#[test]
fn right_and_left_move_freely_and_keep_what_was_chosen() {
    let questions = [
        choice("a", &["X", "Y"], true),
        choice("b", &["P", "Q"], false),
    ];
    let mut prompt = Prompt::new(&questions);
    prompt.on_event(&key(KeyCode::Char(' '))); // tick X, not confirmed
    prompt.on_event(&key(KeyCode::Right));
    assert_eq!(prompt.index, 1);
    assert!(!prompt.drafts[0].done, "moving on is not confirming");
    prompt.on_event(&key(KeyCode::Left));
    assert_eq!((prompt.index, &prompt.drafts[0].chosen[..]), (0, &[0][..]));
    prompt.on_event(&key(KeyCode::Right));
    prompt.on_event(&key(KeyCode::Right));
    assert!(matches!(prompt.screen, Screen::Review));
    let answers = sent(prompt.on_event(&key(KeyCode::Enter)));
    assert_eq!(answers[0].selected, ["X"]);
    assert_eq!(answers[1], Answer::skipped("b"));
}
