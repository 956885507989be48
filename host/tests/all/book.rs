//! The book holds together: every link between its pages (and from the
//! README into it) leads to a page that exists, and to a heading of it
//! when it names one, and every "SPEC §N" the code and the docs cite names
//! a section of the specification.

use std::path::Path;

use ask_user_test_support::book_pages;

#[test]
fn every_link_between_pages_leads_to_one() {
    let mut broken = Vec::new();
    for (page, text) in book_pages() {
        let dir = page.parent().unwrap();
        for link in text.split("](").skip(1) {
            let target = link.split([')', ' ']).next().unwrap();
            let file = target.split('#').next().unwrap();
            if file.is_empty() || file.contains("://") || file.starts_with("mailto:") {
                continue;
            }
            let Ok(linked) = std::fs::read_to_string(dir.join(file)) else {
                broken.push(format!("{}: {target}", page.display()));
                continue;
            };
            if let Some((_, anchor)) = target.split_once('#')
                && !linked
                    .lines()
                    .filter_map(|line| line.strip_prefix('#'))
                    .any(|heading| anchor_of(heading.trim_start_matches('#')) == anchor)
            {
                broken.push(format!("{}: {target} (no such heading)", page.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}

/// The id mdBook gives a heading: lower case, words joined by `-`, other
/// punctuation left out.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

#[test]
fn every_spec_citation_names_a_section_of_the_specification() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let spec = std::fs::read_to_string(repo.join("docs/src/spec.md")).unwrap();
    let sections: Vec<String> = spec
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .filter_map(|heading| heading.split('.').next())
        .map(str::to_owned)
        .collect();
    assert!(sections.len() >= 12, "{sections:?}");
    let mut cited = Vec::new();
    let mut folders = [
        "seam", "guest", "host", "tests", "codes", "packages", "docs/src",
    ]
    .map(|folder| repo.join(folder))
    .to_vec();
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.')
                    && !["node_modules", "npm", "target", "transpiled"].contains(&name.as_str())
                {
                    folders.push(path);
                }
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for citation in text.split("SPEC §").skip(1) {
                let number: String = citation.chars().take_while(char::is_ascii_digit).collect();
                // "SPEC §N" names the form, not a section.
                if !number.is_empty() {
                    cited.push((path.clone(), number));
                }
            }
        }
    }
    assert!(cited.len() >= 20, "{} citations", cited.len());
    for (path, number) in cited {
        assert!(
            sections.contains(&number),
            "{} cites SPEC §{number}, which docs/src/spec.md has no section of",
            path.display()
        );
    }
}
