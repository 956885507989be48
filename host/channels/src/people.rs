//! [`person`]: who answers on a channel.

use ask_user_inbox::notify::ChannelHost;
use ask_user_inbox::store::Person;

/// Who answers on `channel`: in one user's inbox, `themselves`; in a
/// team's, the person `people` names them (`them`, as the service says),
/// while their token holds. Else, why not.
pub async fn person(
    host: &dyn ChannelHost,
    channel: &str,
    people: Option<&String>,
    them: &str,
    themselves: impl FnOnce() -> Person,
) -> Result<Person, String> {
    if !host.team() {
        return Ok(themselves());
    }
    let Some(name) = people else {
        return Err(format!(
            "{them} is not one of this team's people ([inbox.channels.{channel}] people)."
        ));
    };
    match host.person(name.clone()).await {
        Ok(Some(person)) => Ok(person),
        Ok(None) => Err(format!(
            "{name} is not a person of this team, or their token was revoked."
        )),
        Err(error) => {
            tracing::warn!(channel, %error, "who answers could not be read");
            Err("the inbox could not check who you are; try again.".to_owned())
        }
    }
}
