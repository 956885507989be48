//! `ask-user inbox token …`: a team's identities, in its database; or the
//! tokens of the agents that reach one user's inbox over loopback (`[inbox]
//! agents`), in its state directory's.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use ask_user::text::clean;
use clap::Subcommand;

use super::{CliError, Exit, say};

/// The variable that may hold a team's database URL.
pub const DATABASE_ENV: &str = "ASK_USER_INBOX_DATABASE";

#[derive(Subcommand)]
pub enum Command {
    /// Make a token; it is printed once, and stored only as a digest.
    Create {
        /// Its name: who the inbox says asked or answered.
        name: String,
        /// An agent asks and waits; a person lists and answers.
        #[arg(long, value_enum)]
        role: TokenRole,
        /// A person's groups, comma-separated: they answer the questions
        /// whose audience names one of them (or has none).
        #[arg(long, value_delimiter = ',', value_name = "GROUPS")]
        groups: Vec<String>,
        /// A team's database (postgres://…); default: this user's inbox.
        #[arg(long, value_name = "URL", env = DATABASE_ENV, hide_env_values = true)]
        database: Option<String>,
    },
    /// List the tokens (their names, roles and groups; never a token).
    List {
        /// A team's database (postgres://…); default: this user's inbox.
        #[arg(long, value_name = "URL", env = DATABASE_ENV, hide_env_values = true)]
        database: Option<String>,
    },
    /// Revoke a token, on every server at once.
    Revoke {
        name: String,
        /// A team's database (postgres://…); default: this user's inbox.
        #[arg(long, value_name = "URL", env = DATABASE_ENV, hide_env_values = true)]
        database: Option<String>,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum TokenRole {
    Agent,
    Person,
}

/// `ask-user inbox token …`, for the inbox whose database is named, or
/// this user's, serving from `state_dir`.
pub async fn run(command: Command, state_dir: &Path) -> Exit {
    use ask_user::inbox::store::team::{Role, Tokens};
    use ask_user::inbox::store::{self, Opened, SqliteStore};
    let connect = async |url: Option<String>| -> Result<Arc<dyn Tokens>, CliError> {
        Ok(match url {
            Some(url) => match store::open(&url).await? {
                Opened::Team(store) => store as Arc<dyn Tokens>,
                Opened::Local(store) => store as Arc<dyn Tokens>,
            },
            None => {
                let dir = ask_user::files::private_dir(state_dir)?;
                let path = dir.join(ask_user::inbox::DATABASE_FILE);
                Arc::new(SqliteStore::open(&path)?)
            }
        })
    };
    let now = ask_user::inbox::now();
    match command {
        Command::Create {
            name,
            role,
            groups,
            database,
        } => {
            let role = match role {
                TokenRole::Agent => Role::Agent,
                TokenRole::Person => Role::Person,
            };
            if role == Role::Agent && !groups.is_empty() {
                return Err(CliError::new(
                    "groups are a person's; an agent names its audience in its config",
                ));
            }
            let token = connect(database)
                .await?
                .create_token(&name, role, &groups, now)
                .await?;
            println!("{token}");
            say(&format!(
                "made {} token {name:?}: it is shown this once, keep it secret",
                role.as_str()
            ));
            Ok(ExitCode::SUCCESS)
        }
        Command::List { database } => {
            let tokens = connect(database).await?.tokens().await?;
            for row in tokens {
                let identity = row.identity;
                let revoked = match row.revoked_at {
                    Some(_) => "  (revoked)",
                    None => "",
                };
                println!(
                    "{}  {}  {}{revoked}",
                    clean(&identity.name, false),
                    identity.role.as_str(),
                    clean(&identity.groups.join(","), false)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Revoke { name, database } => {
            let revoked = connect(database).await?.revoke(&name, now).await?;
            if !revoked {
                return Err(CliError::new(format!(
                    "no token named {name:?} that is not revoked already"
                )));
            }
            say(&format!("revoked {name:?} on every server"));
            Ok(ExitCode::SUCCESS)
        }
    }
}
