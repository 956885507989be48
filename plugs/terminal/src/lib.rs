//! The `terminal` seam plug: a plain prompt for `wasmtime run` at a
//! terminal. Each question is written to standard error (standard output
//! is the runtime's, for the call's result) and answered by one line of
//! standard input: option numbers (`2`, or `1,3` where several may be
//! chosen) pick options, any other text is the person's own words, an
//! empty line skips. Standard input that ends first means nobody is there
//! to ask: `NO_PROVIDER`, and nothing is answered.

use std::io::{BufRead, Write};

use ask_user_plug::{Answer, AskError, ErrorCode, Guest, Question, Request, error};

struct Plug;

impl Guest for Plug {
    fn ask(request: Request) -> Result<Vec<Answer>, AskError> {
        let mut input = std::io::stdin().lock();
        let mut screen = std::io::stderr().lock();
        let total = request.questions.len();
        let mut answers = Vec::with_capacity(total);
        for (at, question) in request.questions.iter().enumerate() {
            show(&mut screen, question, at + 1, total).map_err(cannot_write)?;
            let mut line = String::new();
            let read = input.read_line(&mut line).map_err(|e| {
                error(
                    ErrorCode::NoProvider,
                    format!("cannot read standard input: {e}"),
                )
            })?;
            if read == 0 {
                return Err(error(
                    ErrorCode::NoProvider,
                    format!(
                        "standard input ended before question {:?} was answered: nobody is \
                         there to ask (run with a terminal, or use the answers or inbox plug)",
                        question.id
                    ),
                ));
            }
            answers.push(answer(question, line.trim()));
        }
        Ok(answers)
    }
}

fn cannot_write(e: std::io::Error) -> AskError {
    error(
        ErrorCode::NoProvider,
        format!("cannot write the question to standard error: {e}"),
    )
}

fn show(screen: &mut impl Write, q: &Question, at: usize, total: usize) -> std::io::Result<()> {
    writeln!(screen)?;
    match &q.header {
        Some(header) => writeln!(screen, "[{at}/{total}] {header}: {}", q.question)?,
        None => writeln!(screen, "[{at}/{total}] {}", q.question)?,
    }
    let options = q.options.as_deref().unwrap_or_default();
    for (number, option) in options.iter().enumerate() {
        match &option.description {
            Some(description) => {
                writeln!(screen, "  {}. {} — {description}", number + 1, option.label)?
            }
            None => writeln!(screen, "  {}. {}", number + 1, option.label)?,
        }
    }
    let how = match (options.len(), q.multi_select == Some(true)) {
        (0, _) => "Your answer (Enter skips): ".to_owned(),
        (n, true) => format!("Numbers 1-{n} (e.g. 1,3), or your own words (Enter skips): "),
        (n, false) => format!("A number 1-{n}, or your own words (Enter skips): "),
    };
    write!(screen, "{how}")?;
    screen.flush()
}

/// The answer a line gives: option numbers pick options, anything else is
/// the person's own words, nothing skips.
fn answer(q: &Question, line: &str) -> Answer {
    let options = q.options.as_deref().unwrap_or_default();
    let multi = q.multi_select == Some(true);
    let picked: Option<Vec<String>> = line
        .split([',', ' '])
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.parse::<usize>()
                .ok()
                .and_then(|n| options.get(n.checked_sub(1)?))
                .map(|option| option.label.clone())
        })
        .collect();
    match picked {
        _ if line.is_empty() => Answer {
            id: q.id.clone(),
            selected: Vec::new(),
            custom: None,
        },
        Some(labels) if multi || labels.len() == 1 => {
            let mut selected: Vec<String> = Vec::with_capacity(labels.len());
            for label in labels {
                if !selected.contains(&label) {
                    selected.push(label);
                }
            }
            Answer {
                id: q.id.clone(),
                selected,
                custom: None,
            }
        }
        _ => Answer {
            id: q.id.clone(),
            selected: Vec::new(),
            custom: Some(line.to_owned()),
        },
    }
}

ask_user_plug::export_plug!(Plug with_types_in ask_user_plug);
