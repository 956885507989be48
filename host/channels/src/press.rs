//! [`Press`]: a button's data, made by a channel and read back from
//! whoever pressed it.

use ask_user_inbox::store::Record;

/// A button of a channel's: what it does, to which batch (by the key the
/// channel posted it under) and question. Its data is opaque (`c12.0.3`:
/// choose option 3 of question 0 of batch 12), never an answer: a client
/// can send any data for a button, so each press is checked against what
/// the channel posted.
#[derive(Debug, PartialEq)]
pub enum Press {
    Choose {
        key: u64,
        question: usize,
        option: usize,
    },
    Toggle {
        key: u64,
        question: usize,
        option: usize,
    },
    Send {
        key: u64,
        question: usize,
    },
    OwnWords {
        key: u64,
        question: usize,
    },
    Skip {
        key: u64,
        question: usize,
    },
}

impl Press {
    /// The last buttons under question `question` of `record` (posted under
    /// `key`), with their labels: own words and Skip, where it takes them.
    pub fn closing(record: &Record, key: u64, question: usize) -> Vec<(String, Press)> {
        let asked = &record.request.questions[question];
        let mut presses = Vec::new();
        if asked.own_words().allowed() {
            presses.push((
                "✍ Type your own answer".to_owned(),
                Press::OwnWords { key, question },
            ));
        }
        if !asked.is_required() {
            presses.push(("Skip".to_owned(), Press::Skip { key, question }));
        }
        presses
    }

    /// The button's data: at most 21 bytes, far from Telegram's 64.
    pub fn data(&self) -> String {
        match *self {
            Press::Choose {
                key,
                question,
                option,
            } => format!("c{key}.{question}.{option}"),
            Press::Toggle {
                key,
                question,
                option,
            } => format!("t{key}.{question}.{option}"),
            Press::Send { key, question } => format!("s{key}.{question}"),
            Press::OwnWords { key, question } => format!("o{key}.{question}"),
            Press::Skip { key, question } => format!("k{key}.{question}"),
        }
    }

    /// Reads a button's data; `None` for anything this channel never made.
    pub fn parse(data: &str) -> Option<Press> {
        let mut chars = data.chars();
        let op = chars.next()?;
        let numbers: Vec<u64> = chars
            .as_str()
            .split('.')
            .map(|n| n.parse().ok())
            .collect::<Option<_>>()?;
        let index = |n: u64| usize::try_from(n).ok();
        Some(match (op, numbers.as_slice()) {
            ('c', &[key, q, o]) => Press::Choose {
                key,
                question: index(q)?,
                option: index(o)?,
            },
            ('t', &[key, q, o]) => Press::Toggle {
                key,
                question: index(q)?,
                option: index(o)?,
            },
            ('s', &[key, q]) => Press::Send {
                key,
                question: index(q)?,
            },
            ('o', &[key, q]) => Press::OwnWords {
                key,
                question: index(q)?,
            },
            ('k', &[key, q]) => Press::Skip {
                key,
                question: index(q)?,
            },
            _ => return None,
        })
    }

    pub fn key(&self) -> u64 {
        match *self {
            Press::Choose { key, .. }
            | Press::Toggle { key, .. }
            | Press::Send { key, .. }
            | Press::OwnWords { key, .. }
            | Press::Skip { key, .. } => key,
        }
    }

    pub fn question(&self) -> usize {
        match *self {
            Press::Choose { question, .. }
            | Press::Toggle { question, .. }
            | Press::Send { question, .. }
            | Press::OwnWords { question, .. }
            | Press::Skip { question, .. } => question,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buttons_data_is_read_back_and_nothing_else_is() {
        for press in [
            Press::Choose {
                key: u64::MAX,
                question: 15,
                option: 31,
            },
            Press::Toggle {
                key: 3,
                question: 0,
                option: 2,
            },
            Press::Send {
                key: 3,
                question: 1,
            },
            Press::OwnWords {
                key: 0,
                question: 0,
            },
            Press::Skip {
                key: 7,
                question: 2,
            },
        ] {
            let data = press.data();
            assert!(data.len() <= 64, "{data}");
            assert_eq!(Press::parse(&data), Some(press));
        }
        for forged in [
            "", "x1.2", "c1.2", "c1.2.3.4", "c-1.0.0", "s1.a", "k1", "c1..0",
        ] {
            assert_eq!(Press::parse(forged), None, "{forged}");
        }
    }
}
