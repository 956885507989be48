//! The terminal prompt's state and what each key does to it. No I/O here.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use tui_input::backend::crossterm::EventHandler;
use tui_input::{Input, InputRequest};

use ask_user_seam::question::{Answer, Question};

/// Where the human is in the batch.
pub enum Screen {
    /// On question `index`, moving among its rows.
    Choosing,
    /// Typing free text for the current question.
    Typing(Input),
    /// Looking over all answers before sending them.
    Review,
}

/// One question's answer so far.
#[derive(Default, Clone)]
pub struct Draft {
    /// The highlighted row.
    pub cursor: usize,
    /// Chosen option indices, in the order of the options.
    pub chosen: Vec<usize>,
    pub custom: Option<String>,
    /// Confirmed once (answered or skipped), for the bar of questions.
    pub done: bool,
}

/// What the prompt wants after a key.
pub enum Step {
    Continue,
    Send(Vec<Answer>),
    Dismiss,
}

/// The whole batch on screen.
pub struct Prompt<'q> {
    pub questions: &'q [Question],
    pub index: usize,
    pub drafts: Vec<Draft>,
    pub screen: Screen,
    /// The first line of the question (or review) shown when it does not
    /// fit the screen; PgUp/PgDn move it by `page` lines.
    pub scroll: usize,
    /// The lines of question the screen shows, as last drawn.
    pub page: usize,
    /// Changing one answer from the review: confirming it goes back there.
    revising: bool,
    /// A relayed sub-agent's chain (`session-1 › reviewer`), said above
    /// every screen.
    pub asked_by: Option<String>,
    /// Where the question is offered too (the web page's address), kept in
    /// view under the keys.
    pub also_at: Vec<String>,
    /// Esc was pressed once: a second dismisses every question, any other
    /// key goes on (as the page asks before it dismisses).
    pub dismissing: bool,
    /// Why the answer just confirmed was not taken (a field of another
    /// server's form that takes a number, or must be answered); shown
    /// until the next key.
    pub problem: Option<String>,
}

/// What a row under a question with options stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    Option(usize),
    /// "Type your own answer", where the question takes own words.
    OwnWords,
    /// "Skip this question", where it may be skipped.
    Skip,
}

/// The rows under a question with options: each option, then these two.
pub const TYPE_OWN: &str = "Type your own answer";
pub const SKIP: &str = "Skip this question";

impl<'q> Prompt<'q> {
    pub fn new(questions: &'q [Question]) -> Self {
        let mut prompt = Prompt {
            questions,
            index: 0,
            drafts: vec![Draft::default(); questions.len()],
            screen: Screen::Choosing,
            scroll: 0,
            page: 1,
            revising: false,
            asked_by: None,
            also_at: Vec::new(),
            dismissing: false,
            problem: None,
        };
        prompt.enter_question();
        prompt
    }

    pub fn question(&self) -> &'q Question {
        &self.questions[self.index]
    }

    pub fn options(&self) -> usize {
        self.question().options.as_ref().map_or(0, Vec::len)
    }

    /// Rows: the options, "type your own" (where it takes own words),
    /// "skip" (where it may be skipped).
    pub fn rows(&self) -> usize {
        let q = self.question();
        self.options() + usize::from(q.own_words().allowed()) + usize::from(!q.is_required())
    }

    /// What row `n` stands for.
    pub fn row(&self, n: usize) -> Row {
        match n.checked_sub(self.options()) {
            None => Row::Option(n),
            Some(0) if self.question().own_words().allowed() => Row::OwnWords,
            Some(_) => Row::Skip,
        }
    }

    fn draft(&mut self) -> &mut Draft {
        &mut self.drafts[self.index]
    }

    /// A question without options is a free-text prompt straight away.
    fn enter_question(&mut self) {
        self.scroll = 0;
        self.screen = if self.options() == 0 {
            Screen::Typing(Input::new(
                self.drafts[self.index].custom.clone().unwrap_or_default(),
            ))
        } else {
            Screen::Choosing
        };
    }

    /// Confirms the current question and goes on: to the next, or to the
    /// review (straight back to it when changing one answer from there).
    fn advance(&mut self) {
        self.drafts[self.index].done = true;
        self.forward();
    }

    /// Goes on without confirming (→): the answer so far is kept.
    fn forward(&mut self) {
        if self.index + 1 < self.questions.len() && !self.revising {
            self.index += 1;
            self.enter_question();
        } else {
            self.scroll = 0;
            self.screen = Screen::Review;
        }
    }

    fn back(&mut self) {
        if self.index > 0 {
            self.index -= 1;
        }
        self.enter_question();
    }

    pub fn on_event(&mut self, event: &Event) -> Step {
        if let Event::Paste(text) = event {
            self.on_paste(text);
            return Step::Continue;
        }
        let Event::Key(key) = event else {
            return Step::Continue;
        };
        if key.kind == KeyEventKind::Release {
            return Step::Continue;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Step::Dismiss;
        }
        let has_options = self.options() > 0;
        if key.code == KeyCode::Esc {
            // Typing among options: Esc leaves the field, the words kept.
            if let Screen::Typing(input) = &self.screen
                && has_options
            {
                let text = input.value().trim().to_owned();
                self.keep_typed(text);
                self.screen = Screen::Choosing;
                self.dismissing = false;
                return Step::Continue;
            }
            if self.dismissing {
                return Step::Dismiss;
            }
            self.dismissing = true;
            return Step::Continue;
        }
        self.dismissing = false;
        self.problem = None;
        // A question or review longer than the screen scrolls; the rows
        // and the keys stay in view (the painter clamps the offset).
        match key.code {
            KeyCode::PageDown => {
                self.scroll += self.page.max(1);
                return Step::Continue;
            }
            KeyCode::PageUp => {
                self.scroll = self.scroll.saturating_sub(self.page.max(1));
                return Step::Continue;
            }
            _ => {}
        }
        match &mut self.screen {
            Screen::Review => self.on_review(key),
            Screen::Choosing => self.on_choosing(key),
            Screen::Typing(input) => match key.code {
                // Alt+Enter: own words may span lines.
                KeyCode::Enter if key.modifiers.contains(KeyModifiers::ALT) => {
                    input.handle(InputRequest::InsertChar('\n'));
                    Step::Continue
                }
                KeyCode::Enter => {
                    let text = input.value().trim().to_owned();
                    self.finish_typing(text);
                    Step::Continue
                }
                // On to the next question, the words kept, not confirmed.
                KeyCode::Tab => {
                    let text = input.value().trim().to_owned();
                    self.keep_typed(text);
                    self.forward();
                    Step::Continue
                }
                // The same keys on every screen: Shift+Tab goes back (to
                // the options, else the previous question).
                KeyCode::BackTab if has_options => {
                    self.screen = Screen::Choosing;
                    Step::Continue
                }
                KeyCode::BackTab => {
                    self.back();
                    Step::Continue
                }
                _ => {
                    input.handle_event(event);
                    Step::Continue
                }
            },
        }
    }

    /// A paste (bracketed by the terminal) is text, whatever it holds: its
    /// newlines, spaces and digits never act as keys. Typing, it goes in at
    /// the cursor; on the options, it starts the human's own words (where
    /// the question takes them).
    fn on_paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let takes_words = self.question().own_words().allowed();
        match &mut self.screen {
            Screen::Typing(input) => {
                for c in text.chars() {
                    input.handle(InputRequest::InsertChar(c));
                }
            }
            Screen::Choosing if takes_words => self.screen = Screen::Typing(Input::new(text)),
            Screen::Choosing | Screen::Review => {}
        }
    }

    /// Enter on typed words: confirmed, unless the question does not take
    /// them (then it says why, and the words stay to be mended).
    fn finish_typing(&mut self, text: String) {
        self.keep_typed(text);
        self.confirm();
    }

    /// Confirms the current question ([`advance`](Self::advance)), unless it
    /// does not take the answer drafted: then it says why
    /// ([`problem`](Self::problem)) and stays.
    fn confirm(&mut self) {
        self.problem = self.question().refuses(&self.answer(self.index));
        if self.problem.is_none() {
            self.advance();
        }
    }

    /// The words typed become the question's own words (none when empty).
    fn keep_typed(&mut self, text: String) {
        let multi = self.question().is_multi_select();
        let draft = self.draft();
        if text.is_empty() {
            draft.custom = None;
        } else {
            draft.custom = Some(text);
            // Single-select: the text replaces the choice.
            if !multi {
                draft.chosen.clear();
            }
        }
    }

    fn on_choosing(&mut self, key: &KeyEvent) -> Step {
        let rows = self.rows();
        let options = self.options();
        let multi = self.question().is_multi_select();
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => {
                let draft = self.draft();
                draft.cursor = (draft.cursor + rows - 1) % rows;
            }
            KeyCode::Down | KeyCode::Char('j') => {
                let draft = self.draft();
                draft.cursor = (draft.cursor + 1) % rows;
            }
            KeyCode::Left | KeyCode::Backspace | KeyCode::BackTab => self.back(),
            KeyCode::Right | KeyCode::Tab => self.forward(),
            // Rows 1-9 are numbered on screen; the digit acts on its row.
            KeyCode::Char(c @ '1'..='9') if (c as usize - '1' as usize) < rows => {
                let row = c as usize - '1' as usize;
                self.draft().cursor = row;
                if multi && row < options {
                    self.toggle(row);
                } else {
                    self.activate(row);
                }
            }
            KeyCode::Char(' ') if multi && self.drafts[self.index].cursor < options => {
                let at = self.drafts[self.index].cursor;
                self.toggle(at);
            }
            KeyCode::Enter => {
                let at = self.drafts[self.index].cursor;
                self.activate(at);
            }
            _ => {}
        }
        Step::Continue
    }

    /// Enter on `row`: choose an option (multi-select: confirm the ticks),
    /// start typing, or skip.
    fn activate(&mut self, row: usize) {
        match self.row(row) {
            // The ticks are the answer: with nothing ticked (and no own
            // words), the question is skipped, as on the page, where it
            // may be.
            Row::Option(_) if self.question().is_multi_select() => self.confirm(),
            Row::Option(option) => self.choose(option),
            Row::OwnWords => {
                let text = self.drafts[self.index].custom.clone().unwrap_or_default();
                self.screen = Screen::Typing(Input::new(text));
            }
            Row::Skip => {
                let draft = self.draft();
                draft.chosen.clear();
                draft.custom = None;
                self.advance();
            }
        }
    }

    fn choose(&mut self, option: usize) {
        let draft = self.draft();
        draft.chosen = vec![option];
        draft.custom = None;
        self.advance();
    }

    fn toggle(&mut self, option: usize) {
        let chosen = &mut self.draft().chosen;
        match chosen.iter().position(|&o| o == option) {
            Some(at) => {
                chosen.remove(at);
            }
            None => {
                chosen.push(option);
                chosen.sort_unstable();
            }
        }
    }

    fn on_review(&mut self, key: &KeyEvent) -> Step {
        match key.code {
            // What a question does not take sends nothing: its question
            // comes back, saying why.
            KeyCode::Enter => {
                let answers = self.answers();
                let refused = self
                    .questions
                    .iter()
                    .zip(&answers)
                    .enumerate()
                    .find_map(|(n, (q, answer))| Some((n, q.refuses(answer)?)));
                let Some((index, problem)) = refused else {
                    return Step::Send(answers);
                };
                self.index = index;
                self.revising = true;
                self.enter_question();
                self.problem = Some(problem);
                Step::Continue
            }
            KeyCode::Left | KeyCode::Backspace | KeyCode::BackTab => {
                self.enter_question();
                Step::Continue
            }
            KeyCode::Char(c @ '1'..='9') if (c as usize - '1' as usize) < self.questions.len() => {
                self.index = c as usize - '1' as usize;
                self.revising = true;
                self.enter_question();
                Step::Continue
            }
            _ => Step::Continue,
        }
    }

    /// The answers as drafted: chosen labels, free text, or skipped.
    pub fn answers(&self) -> Vec<Answer> {
        (0..self.questions.len()).map(|n| self.answer(n)).collect()
    }

    /// Question `index`'s answer as drafted.
    fn answer(&self, index: usize) -> Answer {
        let (q, d) = (&self.questions[index], &self.drafts[index]);
        Answer {
            id: q.id.clone(),
            selected: d
                .chosen
                .iter()
                .filter_map(|&i| q.options.as_ref()?.get(i).map(|o| o.label.clone()))
                .collect(),
            custom: d.custom.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_seam::question::QuestionOption;

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

    /// A field of another server's form: a required choice shows neither
    /// "Type your own answer" nor "Skip", and a number field takes only a
    /// number; what does not fit is not taken, says why, and stays.
    #[test]
    fn a_question_offers_and_takes_only_what_it_accepts() {
        use ask_user_seam::question::{Accepts, OwnWords};
        let mut target = choice("target", &["Staging", "Production"], false);
        target.accepts = Some(Accepts {
            required: true,
            own_words: OwnWords::None,
        });
        let mut replicas = Question::new("replicas", "How many?");
        replicas.accepts = Some(Accepts {
            required: false,
            own_words: OwnWords::Number {
                integer: true,
                minimum: Some(1.0),
                maximum: None,
            },
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
}
