//! The team capabilities of [`PgStore`]: tokens and page sessions stored
//! as digests, the outbox claimed with `FOR UPDATE SKIP LOCKED`, and the
//! announcements on [`CHANNEL`]: one connection per server process listens
//! (not one per waiter), and each announcement is passed on; a lost
//! connection is passed on (announcements may be lost with it), and one is
//! made again, which is passed on once it listens. A connection that dies
//! without a word is found by the server's own probe, announced every few
//! seconds, no longer coming back.

use std::time::Duration;

use sqlx::Row;
use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use super::{CHANNEL, COLUMNS, PgStore, announce, identity, record};
use crate::store::team::{
    Announced, Announcements, CLAIM_LEASE, Heard, Identity, LEASE_CHECK, LEASE_GRACE, LEASE_RETRY,
    Leases, Notice, Outbox, Role, SESSION_LIFETIME, SignIns, TOKEN_PREFIX, TokenRow, Tokens,
};
use crate::store::{BoxFuture, Millis, Record, Store, StoreError, StoreFuture};

/// How long to wait before listening again after the database refused.
const RETRY: Duration = Duration::from_secs(1);

/// How often a server announces its probe, which its listening connection
/// must hear; after this many probes unheard, the connection is taken for
/// lost (one that died silently, with no reset, say) and made again.
const PROBE: Duration = Duration::from_secs(5);
const PROBES_MISSED: u32 = 3;

/// What a probe's announcement starts with: never a question's id, nor
/// empty (a revocation).
const PROBE_PREFIX: &str = "~probe-";

impl Tokens for PgStore {
    fn create_token<'a>(
        &'a self,
        name: &'a str,
        role: Role,
        groups: &'a [String],
        now: Millis,
    ) -> StoreFuture<'a, String> {
        Box::pin(async move {
            let token = format!(
                "{TOKEN_PREFIX}{}",
                ask_user_seam::secret::token().map_err(StoreError::backend)?
            );
            let made = sqlx::query(
                "INSERT INTO tokens (name, role, groups, hash, created_at) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (name) DO NOTHING",
            )
            .bind(name)
            .bind(role.as_str())
            .bind(groups)
            .bind(crate::digest(&token))
            .bind(now)
            .execute(&self.pool)
            .await?;
            if made.rows_affected() == 0 {
                return Err(StoreError::Conflict(format!(
                    "a token named {name:?} exists already (revoked ones too, so that every answer \
                     names one identity): choose another name"
                )));
            }
            Ok(token)
        })
    }

    fn tokens(&self) -> StoreFuture<'_, Vec<TokenRow>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT name, role, groups, created_at, revoked_at FROM tokens ORDER BY created_at",
            )
            .fetch_all(&self.pool)
            .await?;
            rows.iter()
                .map(|row| {
                    Ok(TokenRow {
                        identity: identity(row)?,
                        created_at: row.try_get(3)?,
                        revoked_at: row.try_get(4)?,
                    })
                })
                .collect()
        })
    }

    fn revoke<'a>(&'a self, name: &'a str, now: Millis) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut transaction = self.pool.begin().await?;
            let done = sqlx::query(
                "UPDATE tokens SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL",
            )
            .bind(name)
            .bind(now)
            .execute(&mut *transaction)
            .await?;
            let revoked = done.rows_affected() == 1;
            if revoked {
                announce(&mut transaction, "").await?;
            }
            transaction.commit().await?;
            Ok(revoked)
        })
    }

    fn identify<'a>(&'a self, token: &'a str) -> StoreFuture<'a, Option<Identity>> {
        Box::pin(async move {
            let row = sqlx::query(
                "SELECT name, role, groups FROM tokens WHERE hash = $1 AND revoked_at IS NULL",
            )
            .bind(crate::digest(token))
            .fetch_optional(&self.pool)
            .await?;
            row.as_ref().map(identity).transpose()
        })
    }
}

impl SignIns for PgStore {
    fn sign_in<'a>(
        &'a self,
        token: &'a str,
        now: Millis,
    ) -> StoreFuture<'a, Option<(String, Identity)>> {
        Box::pin(async move {
            let Some(identity) = self.identify(token).await? else {
                return Ok(None);
            };
            if identity.role != Role::Person {
                return Ok(None);
            }
            sqlx::query("DELETE FROM sessions WHERE expires_at <= $1")
                .bind(now)
                .execute(&self.pool)
                .await?;
            let session = ask_user_seam::secret::token().map_err(StoreError::backend)?;
            sqlx::query(
                "INSERT INTO sessions (digest, token_name, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(crate::digest(&session))
            .bind(&identity.name)
            .bind(now)
            .bind(now + SESSION_LIFETIME)
            .execute(&self.pool)
            .await?;
            Ok(Some((session, identity)))
        })
    }

    fn session<'a>(&'a self, session: &'a str, now: Millis) -> StoreFuture<'a, Option<Identity>> {
        Box::pin(async move {
            let row = sqlx::query(
                "SELECT t.name, t.role, t.groups FROM sessions s JOIN tokens t ON t.name = s.token_name \
                 WHERE s.digest = $1 AND s.expires_at > $2 AND t.revoked_at IS NULL",
            )
            .bind(crate::digest(session))
            .bind(now)
            .fetch_optional(&self.pool)
            .await?;
            row.as_ref().map(identity).transpose()
        })
    }

    fn sign_out<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query("DELETE FROM sessions WHERE digest = $1")
                .bind(crate::digest(session))
                .execute(&self.pool)
                .await?;
            Ok(())
        })
    }
}

impl Outbox for PgStore {
    fn escalate(&self, cutoff: Millis, now: Millis) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            sqlx::query(
                "INSERT INTO outbox (question_id, stage, due_at) SELECT id, $3, $2 FROM questions \
                 WHERE state = 'waiting' AND asked_at <= $1 ON CONFLICT DO NOTHING",
            )
            .bind(cutoff)
            .bind(now)
            .bind(stage(Notice::Escalated))
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }

    fn claim_notices<'a>(
        &'a self,
        me: &'a str,
        now: Millis,
        asked_before: Millis,
        limit: i64,
    ) -> StoreFuture<'a, Vec<(Record, Notice)>> {
        Box::pin(async move {
            let claimed: Vec<(String, i32)> = sqlx::query_as(
                "UPDATE outbox o SET claimed_by = $1, claimed_at = $2 FROM ( \
                     SELECT question_id, stage FROM outbox WHERE sent_at IS NULL AND due_at <= $2 \
                     AND (stage <> $5 OR due_at <= $6) \
                     AND (claimed_at IS NULL OR claimed_at < $3) ORDER BY due_at LIMIT $4 \
                     FOR UPDATE SKIP LOCKED) due \
                 WHERE o.question_id = due.question_id AND o.stage = due.stage \
                 RETURNING o.question_id, o.stage",
            )
            .bind(me)
            .bind(now)
            .bind(now - CLAIM_LEASE)
            .bind(limit)
            .bind(stage(Notice::Asked))
            .bind(asked_before)
            .fetch_all(&self.pool)
            .await?;
            let mut notices = Vec::with_capacity(claimed.len());
            for (id, stage) in claimed {
                if let Some(record) = Store::get(self, id).await? {
                    notices.push((record, notice(stage)));
                }
            }
            Ok(notices)
        })
    }

    fn notice_sent<'a>(
        &'a self,
        me: &'a str,
        id: &'a str,
        notice: Notice,
        now: Millis,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query(
                "UPDATE outbox SET sent_at = $4 WHERE question_id = $1 AND stage = $2 \
                 AND claimed_by = $3",
            )
            .bind(id)
            .bind(stage(notice))
            .bind(me)
            .bind(now)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }
}

impl Announcements for PgStore {
    fn listen<'a>(&'a self, closing: CancellationToken, announced: Announced) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // This server's probe: announced through the pool, it must come
            // back through the listening connection.
            let probe = match ask_user_seam::secret::id(PROBE_PREFIX) {
                Ok(probe) => probe,
                Err(error) => {
                    tracing::warn!(%error, "the inbox cannot listen for other servers' answers");
                    return;
                }
            };
            loop {
                let listening = async {
                    let mut listener = PgListener::connect_with(&self.pool).await?;
                    listener.listen(CHANNEL).await?;
                    Ok::<_, sqlx::Error>(listener)
                };
                let mut listener = match listening.await {
                    Ok(listener) => listener,
                    Err(error) => {
                        tracing::warn!(%error, "the inbox cannot listen for other servers' answers");
                        tokio::select! {
                            () = tokio::time::sleep(RETRY) => continue,
                            () = closing.cancelled() => return,
                        }
                    }
                };
                announced(Heard::Listening);
                let mut probing = tokio::time::interval(PROBE);
                let mut probe_heard = tokio::time::Instant::now();
                loop {
                    let received = {
                        let mut next = std::pin::pin!(listener.try_recv());
                        loop {
                            tokio::select! {
                                received = &mut next => break Some(received),
                                _ = probing.tick() => {
                                    if probe_heard.elapsed() > PROBE * PROBES_MISSED {
                                        break None;
                                    }
                                    if let Err(error) = sqlx::query("SELECT pg_notify($1, $2)")
                                        .bind(CHANNEL)
                                        .bind(&probe)
                                        .execute(&self.pool)
                                        .await
                                    {
                                        tracing::warn!(%error, "the inbox cannot probe its listening connection");
                                    }
                                }
                                () = closing.cancelled() => return,
                            }
                        }
                    };
                    match received {
                        Some(Ok(Some(notification))) => match notification.payload() {
                            payload if payload == probe => {
                                probe_heard = tokio::time::Instant::now()
                            }
                            // Another server's probe.
                            payload if payload.starts_with(PROBE_PREFIX) => {}
                            // An empty announcement: a token was revoked.
                            "" => announced(Heard::Revoked),
                            id => announced(Heard::Question(id)),
                        },
                        // The connection was lost, failed, or hears nothing
                        // (its probes stopped coming back): listen anew, on a
                        // connection of its own, and say when it listens.
                        lost => {
                            match lost {
                                Some(Err(error)) => {
                                    tracing::warn!(%error, "the inbox's listening connection failed")
                                }
                                Some(Ok(None)) => tracing::warn!(
                                    "the inbox's listening connection was lost; listening again"
                                ),
                                _ => tracing::warn!(
                                    "the inbox's listening connection hears nothing; listening again"
                                ),
                            }
                            announced(Heard::Lost);
                            break;
                        }
                    }
                }
            }
        })
    }

    fn records<'a>(&'a self, ids: &'a [String]) -> StoreFuture<'a, Vec<Record>> {
        Box::pin(async move {
            let rows = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM questions WHERE id = ANY($1) ORDER BY seq"
            ))
            .bind(ids)
            .fetch_all(&self.pool)
            .await?;
            Ok(rows.iter().filter_map(|row| record(row).ok()).collect())
        })
    }
}

/// How `notice` is stored.
pub(super) fn stage(notice: Notice) -> i32 {
    match notice {
        Notice::Asked => 0,
        Notice::Escalated => 1,
    }
}

/// The notice stored as `stage`.
fn notice(stage: i32) -> Notice {
    match stage {
        0 => Notice::Asked,
        _ => Notice::Escalated,
    }
}

/// A lease is a session-level advisory lock, held on a connection of its
/// own, out of the pool: it goes with that connection (the server's end,
/// a `kill -9`, a network cut once the database notices), never before.
impl Leases for PgStore {
    fn hold<'a>(&'a self, name: &'a str) -> StoreFuture<'a, BoxFuture<'static, ()>> {
        Box::pin(async move {
            let key = lease_key(name);
            loop {
                let mut connection = self.pool.acquire().await?.detach();
                let held: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
                    .bind(key)
                    .fetch_one(&mut connection)
                    .await?;
                // Taken: held once a server that held it has surely seen
                // that it lost it, if the connection still holds it then.
                if held {
                    tokio::time::sleep(LEASE_GRACE).await;
                    if still_held(&mut connection).await {
                        let kept: BoxFuture<'static, ()> = Box::pin(async move {
                            loop {
                                tokio::time::sleep(LEASE_CHECK).await;
                                if !still_held(&mut connection).await {
                                    return;
                                }
                            }
                        });
                        return Ok(kept);
                    }
                    continue;
                }
                drop(connection);
                tokio::time::sleep(LEASE_RETRY).await;
            }
        })
    }
}

/// Whether the session lock on `connection` still holds: the connection
/// answers within [`LEASE_CHECK`].
async fn still_held(connection: &mut sqlx::PgConnection) -> bool {
    let check = sqlx::query("SELECT 1").execute(connection);
    matches!(tokio::time::timeout(LEASE_CHECK, check).await, Ok(Ok(_)))
}

/// The advisory lock of lease `name`: the first eight bytes of a digest of
/// it, so that no two names share one.
fn lease_key(name: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("ask-user lease {name}").as_bytes());
    i64::from_be_bytes(digest[..8].try_into().expect("a digest has eight bytes"))
}
