//! [`Batch`]: a batch's answers, collected question by question where a
//! channel shows them one by one, and sent once each has one.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use ask_user_inbox::notify::ChannelHost;
use ask_user_inbox::store::{Person, Record};
use ask_user_seam::Answer;
use ask_user_seam::remote::Unsettled;

/// What a channel collects of a batch it showed: each question's answer
/// given there, and the options ticked of each multi-select question.
#[derive(Debug, Serialize, Deserialize)]
pub struct Batch {
    /// The inbox's question id.
    pub id: String,
    answers: Vec<Option<Answer>>,
    chosen: Vec<BTreeSet<usize>>,
}

/// What became of an answer given to one question of a batch.
#[derive(Debug, PartialEq)]
pub enum Given {
    /// Kept; this many questions of the batch are still to be answered.
    Noted(usize),
    /// The batch is answered.
    Answered,
    /// It counts for nothing, saying why.
    Refused(String),
}

impl Given {
    /// What to tell whoever gave it.
    pub fn told(&self) -> String {
        match self {
            Given::Noted(left) => format!("Noted; {left} more to answer before it is sent."),
            Given::Answered => "Answered.".to_owned(),
            Given::Refused(why) => format!("Not answered: {why}"),
        }
    }
}

impl Batch {
    /// Nothing given yet for `record`.
    pub fn new(record: &Record) -> Self {
        let count = record.request.questions.len();
        Batch {
            id: record.id.clone(),
            answers: vec![None; count],
            chosen: vec![BTreeSet::new(); count],
        }
    }

    /// The options ticked of question `question`.
    pub fn chosen(&self, question: usize) -> &BTreeSet<usize> {
        &self.chosen[question]
    }

    /// Ticks option `option` of question `question`, or unticks it.
    pub fn toggle(&mut self, question: usize, option: usize) {
        let chosen = &mut self.chosen[question];
        if !chosen.remove(&option) {
            chosen.insert(option);
        }
    }

    /// The options in `range` ticked of question `question` are those of
    /// `ticked` (a group of checkboxes, as it is now).
    pub fn tick(
        &mut self,
        question: usize,
        range: std::ops::Range<usize>,
        ticked: &BTreeSet<usize>,
    ) {
        let chosen = &mut self.chosen[question];
        chosen.retain(|option| !range.contains(option));
        chosen.extend(
            ticked
                .iter()
                .copied()
                .filter(|option| range.contains(option)),
        );
    }

    /// The labels ticked of question `question` of `record`.
    pub fn ticked(&self, record: &Record, question: usize) -> Vec<String> {
        let options = record.request.questions[question]
            .options
            .as_deref()
            .unwrap_or_default();
        self.chosen[question]
            .iter()
            .filter_map(|&option| options.get(option).map(|o| o.label.clone()))
            .collect()
    }

    /// Whether question `question` has an answer here.
    pub fn has(&self, question: usize) -> bool {
        self.answers.get(question).is_some_and(Option::is_some)
    }

    /// `answer` to question `question` of `record` (this batch's), from
    /// `person` on `channel`: kept, and once every question has one, the
    /// batch is answered through `host`, by the page's rules. A person
    /// outside the question's audience is refused first.
    pub async fn give(
        &mut self,
        host: &dyn ChannelHost,
        record: &Record,
        channel: &'static str,
        question: usize,
        answer: Answer,
        person: Option<Person>,
    ) -> Given {
        if person
            .as_ref()
            .is_some_and(|person| !record.answerable_by(&person.groups))
        {
            return Given::Refused("this question is for another group of the team.".to_owned());
        }
        // What the question does not take (a field of another server's
        // form) is refused at once, saying why, and not kept.
        if let Some(problem) = record
            .request
            .questions
            .get(question)
            .and_then(|asked| asked.refuses(&answer))
        {
            return Given::Refused(format!("{problem}."));
        }
        self.answers[question] = Some(answer);
        let Some(answers) = self.answers.iter().cloned().collect::<Option<Vec<_>>>() else {
            return Given::Noted(self.answers.iter().filter(|a| a.is_none()).count());
        };
        match host.answer(self.id.clone(), answers, channel, person).await {
            Ok(()) => Given::Answered,
            Err(Unsettled::NotPending) => {
                Given::Refused("it was answered elsewhere or withdrawn.".to_owned())
            }
            Err(Unsettled::Misfit(error)) => {
                self.answers[question] = None;
                Given::Refused(error.message().to_owned())
            }
            Err(Unsettled::Unrecorded(why)) => {
                tracing::warn!(channel, why, "an answer could not be recorded");
                self.answers[question] = None;
                Given::Refused("the inbox could not record it; try again.".to_owned())
            }
        }
    }
}
