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

/// The rows under a question with options: each option, then these two
/// (own words as a note beside the choice, where the question takes one).
pub const TYPE_OWN: &str = "Type your own answer";
pub const ADD_NOTE: &str = "Add a note";
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
        let beside = self.question().is_multi_select() || self.question().takes_a_note();
        let draft = self.draft();
        if text.is_empty() {
            draft.custom = None;
        } else {
            draft.custom = Some(text);
            // Single-select: the text replaces the choice, unless it is a
            // note beside it.
            if !beside {
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
        let note = self.question().takes_a_note();
        let draft = self.draft();
        draft.chosen = vec![option];
        if !note {
            draft.custom = None;
        }
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
mod tests;
