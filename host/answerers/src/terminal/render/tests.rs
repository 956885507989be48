use super::*;
use ask_user_seam::question::{Question, QuestionOption};

#[test]
fn nothing_the_model_wrote_draws_an_escape() {
    let evil = "\u{1b}[1A\u{1b}[2KApproved\u{1b}]52;c;ZXZpbA==\u{7}";
    let mut q = Question::new("q", format!("Deploy?{evil}"));
    q.header = Some(format!("H{evil}"));
    let mut option = QuestionOption::new(format!("Yes{evil}"));
    option.description = Some(format!("Ships it{evil}"));
    q.options = Some(vec![option]);
    let questions = [q];
    let prompt = super::super::prompt::Prompt::new(&questions);
    let painter = Painter {
        color: false,
        width: 79,
    };
    let frame = painter.frame(&prompt);
    let text = [frame.top, frame.rows, frame.keys].concat().join("\n");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(
        text.contains("Deploy?[1A[2KApproved]52;c;ZXZpbA=="),
        "{text}"
    );
}

fn fitted(prompt: &Prompt, width: usize, height: usize) -> Layout {
    let painter = Painter {
        color: false,
        width,
    };
    painter.fit(&painter.frame(prompt), height, prompt.scroll)
}

fn choice(text: &str, labels: usize) -> Question {
    let mut q = Question::new("q", text);
    q.options = Some(
        (1..=labels)
            .map(|n| {
                let mut option = QuestionOption::new(format!("Option {n}"));
                option.description = Some(format!("What option {n} does."));
                option
            })
            .collect(),
    );
    q
}

/// A question longer than the screen never hides the rows or the keys:
/// it scrolls, and says how.
#[test]
fn a_long_question_scrolls_and_the_rows_and_keys_stay() {
    let words: Vec<String> = (0..500).map(|n| format!("word{n}")).collect();
    let questions = [choice(&words.join(" "), 3)];
    let mut prompt = super::super::prompt::Prompt::new(&questions);
    let layout = fitted(&prompt, 79, 23);
    assert!(layout.lines.len() <= 23, "{}", layout.lines.len());
    let text = layout.lines.join("\n");
    for row in [
        "1. Option 1",
        "3. Option 3",
        "Type your own answer",
        "Skip this question",
    ] {
        assert!(text.contains(row), "{row:?} hidden:\n{text}");
    }
    assert!(
        layout.lines.last().unwrap().contains("Esc dismiss all"),
        "{text}"
    );
    assert!(text.contains("⋯ lines 1–"), "{text}");
    assert!(
        text.contains("word0 ") && !text.contains("word499"),
        "{text}"
    );
    // Scrolled to the end (and no further), the last words show.
    prompt.scroll = 10_000;
    let end = fitted(&prompt, 79, 23);
    let text = end.lines.join("\n");
    assert!(
        text.contains("word499") && !text.contains("word0 "),
        "{text}"
    );
    assert!(end.scroll < 10_000 && end.scroll > 0);
    assert!(text.contains("Skip this question"), "{text}");
}

/// More rows than the screen: the highlighted one stays in view.
#[test]
fn the_highlighted_row_stays_in_view() {
    let questions = [choice("Which one?", 30)];
    let mut prompt = super::super::prompt::Prompt::new(&questions);
    prompt.drafts[0].cursor = 25;
    let layout = fitted(&prompt, 79, 15);
    assert!(layout.lines.len() <= 15);
    let text = layout.lines.join("\n");
    assert!(
        text.contains("›    Option 26"),
        "no number a digit cannot reach:\n{text}"
    );
    assert!(
        !text.contains("Option 1\n"),
        "rows far above are left out:\n{text}"
    );
    assert!(
        layout.lines.last().unwrap().contains("dismiss all"),
        "{text}"
    );
}

/// Every line fits the width the prompt was given, the key line too:
/// the terminal never wraps a line behind the prompt's back.
#[test]
fn every_line_fits_a_narrow_screen() {
    let questions = [choice(
        "Where should this release be deployed, and when?",
        12,
    )];
    let prompt = super::super::prompt::Prompt::new(&questions);
    let layout = fitted(&prompt, 49, 40);
    for line in &layout.lines {
        assert!(line.width() <= 49, "{line:?} is {} wide", line.width());
    }
    let text = layout.lines.join("\n");
    assert!(
        text.contains("  9. Option 9") && text.contains("     Option 10"),
        "{text}"
    );
    assert!(!text.contains("10."), "only digits 1-9 reach a row: {text}");
}

/// A small screen (50×20) and many options: the options scroll, and the
/// question stays in view.
#[test]
fn on_a_small_screen_the_question_stays_above_many_options() {
    let questions = [choice(
        "Where should this release be deployed, and when?",
        12,
    )];
    let prompt = super::super::prompt::Prompt::new(&questions);
    let layout = fitted(&prompt, 49, 20);
    assert!(layout.lines.len() <= 20);
    let text = layout.lines.join("\n");
    assert!(text.contains("Where should this release"), "{text}");
    assert!(text.contains("› 1. Option 1"), "{text}");
    assert!(
        layout.lines.last().unwrap().contains("dismiss all"),
        "{text}"
    );
}

/// No style sets a colour: every one holds on a light theme and a dark.
#[test]
fn styles_keep_the_terminals_own_colours() {
    for style in [plain, bold, dim, selected, header_style, answer_style] {
        let styled = style("x");
        for code in styled.split("\x1b[").skip(1) {
            let params = code.split('m').next().unwrap();
            for param in params.split(';') {
                let n: u32 = param.parse().unwrap_or(0);
                assert!(
                    !(30..=38).contains(&n) && !(90..=97).contains(&n) && !(40..=48).contains(&n),
                    "a colour ({n}) in {styled:?}"
                );
            }
        }
    }
}

/// Own words wrap to the width, and the caret goes where the cursor is,
/// on whichever line that is.
#[test]
fn typed_words_wrap_and_the_caret_follows_the_cursor() {
    let painter = Painter {
        color: false,
        width: 30,
    };
    let mut out = Vec::new();
    let input = Input::new("a".repeat(60));
    let caret = painter.typing(&input, &mut out, "› ");
    // 27 columns a line: 30, less the lead and one for the caret.
    assert_eq!(
        out,
        [
            "› ".to_owned() + &"a".repeat(27),
            "  ".to_owned() + &"a".repeat(27),
            "  aaaaaa".to_owned()
        ]
    );
    assert_eq!(caret, (2, 8));
    let mut out = Vec::new();
    let caret = painter.typing(&input.with_cursor(30), &mut out, "› ");
    assert_eq!(caret, (1, 2 + 3));
    let mut out = vec!["above".to_owned()];
    let caret = painter.typing(
        &Input::new("one\ntwo".into()).with_cursor(5),
        &mut out,
        "› ",
    );
    assert_eq!(out, ["above", "› one", "  two"]);
    assert_eq!(caret, (2, 3), "after the t of two");
}

/// With many questions, the bar and "2 of 4" stay at the top however
/// far a long question scrolls, and a long header is cut so the bar
/// keeps to one line.
#[test]
fn the_bar_of_questions_stays_while_a_long_question_scrolls() {
    let words: Vec<String> = (0..300).map(|n| format!("word{n}")).collect();
    let mut first = choice(&words.join(" "), 2);
    first.header = Some("A header of forty-five characters, give or take".to_owned());
    let questions = [first, choice("Second?", 2), choice("Third?", 2)];
    let mut prompt = super::super::prompt::Prompt::new(&questions);
    prompt.scroll = 10_000;
    let layout = fitted(&prompt, 79, 20);
    assert!(
        layout.lines[0].contains("A header of for…"),
        "{}",
        layout.lines[0]
    );
    assert!(
        layout.lines[0].contains("Review"),
        "one line: {}",
        layout.lines[0]
    );
    assert_eq!(layout.lines[1], "1 of 3");
    let text = layout.lines.join("\n");
    assert!(
        text.contains("word299") && !text.contains("word0 "),
        "{text}"
    );
}

/// With colour, the current question in the bar stands out (reverse
/// video), not by its brackets alone.
#[test]
fn the_current_question_stands_out_in_the_bar() {
    let questions = [choice("First?", 2), choice("Second?", 2)];
    let prompt = super::super::prompt::Prompt::new(&questions);
    let painter = Painter {
        color: true,
        width: 79,
    };
    let frame = painter.frame(&prompt);
    let bar = &frame.top[0];
    assert!(bar.contains(&selected("[Q1 ·]")), "{bar:?}");
    assert!(bar.contains(&header_style(" Q2 · ")), "{bar:?}");
    let plain = fitted(&prompt, 79, 20).lines[0].clone();
    assert_eq!(plain, "[Q1 ·]│ Q2 · │ Review");
}
