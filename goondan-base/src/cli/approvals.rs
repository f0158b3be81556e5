//! `goondan approvals list|answer`: the approval questions `goondan run`'s agents keep in the
//! state directory (or on the NATS server of their journals), answered from another terminal,
//! a script, another machine, or after a restart. The first answer stands; a later one is told
//! so and changes nothing.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use goondan_runtime::calls::approval::{AnswerOutcome, Decision, Listing, QuestionError, now_ms};
use goondan_runtime::tools::result::JsonObject;

use super::run::{questions, state_dir_of};
use super::{EXIT_FAILED, EXIT_OK};

/// `goondan approvals ...`.
#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// List the questions waiting for an answer (with `--all`, answered ones too).
    List {
        /// Where the questions are kept.
        #[command(flatten)]
        place: StatePlace,
        /// Answered and expired questions too.
        #[arg(long)]
        all: bool,
    },
    /// Answer a question: `approve`, `deny [REASON]`, or `edit JSON` (run it with these
    /// arguments). Exit status 1 when the question already had an answer or had expired: the
    /// first answer stands.
    Answer {
        /// The question's id, as `goondan approvals list` shows it.
        id: String,
        /// The decision.
        #[arg(value_enum)]
        decision: AnswerWord,
        /// With `deny`, the reason the model reads; with `edit`, the arguments (a JSON object).
        text: Option<String>,
        /// Answer only if the question is this agent's.
        #[arg(long)]
        agent: Option<String>,
        /// Where the questions are kept.
        #[command(flatten)]
        place: StatePlace,
    },
}

/// The decision of `goondan approvals answer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnswerWord {
    /// Run the call as asked.
    Approve,
    /// Do not run it.
    Deny,
    /// Run it with other arguments.
    Edit,
}

/// Where `goondan approvals` finds the questions: on the NATS server of `--journal`, else of
/// the bundle's `policy.journal` (its entry agent's), else in the state directory (`--state`,
/// else the bundle's `.goondan/`).
#[derive(Debug, Clone, Args)]
pub struct StatePlace {
    /// The state directory (default: `.goondan/` next to the bundle).
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// The bundle whose state directory it is.
    #[arg(long, default_value = "goondan.yaml")]
    pub bundle: PathBuf,
    /// The NATS server (`nats://host:port`) of agents whose journals are on JetStream: their
    /// questions are kept there. Credentials come from `GOONDAN_NATS_TOKEN`, ...
    #[arg(long = "journal", value_name = "URL")]
    pub journal: Option<String>,
}

impl StatePlace {
    fn dir(&self) -> PathBuf {
        state_dir_of(&self.bundle, self.state.as_deref())
    }

    /// The NATS server whose questions these are, if they are on one.
    fn nats(&self) -> Option<String> {
        if let Some(url) = &self.journal {
            return Some(url.clone());
        }
        let bundle = goondan_runtime::bundle::Bundle::load(&self.bundle).ok()?;
        bundle.journal(&bundle.entry_agent()?)?.nats
    }
}

/// Why `goondan approvals` could not run (exit status 2).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApprovalsError {
    /// The questions cannot be read or written, or the id names none.
    #[error(transparent)]
    Store(#[from] QuestionError),
    /// `edit` without arguments, or arguments that are not a JSON object.
    #[error("`edit` takes the arguments the call runs with, a JSON object: {0}")]
    EditArgs(String),
    /// The state directory has no questions.
    #[error("`{}` has no approval questions (is it the state directory of a `goondan run`?)", .0.display())]
    NoQuestions(PathBuf),
    /// The output cannot be written.
    #[error("cannot write the output: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs an `approvals` subcommand.
pub(crate) fn execute(
    command: &ApprovalsCommand,
    json: bool,
    out: &mut dyn Write,
) -> Result<u8, ApprovalsError> {
    let place = match command {
        ApprovalsCommand::List { place, .. } | ApprovalsCommand::Answer { place, .. } => place,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ApprovalsError::Io)?;
    let state = place.dir();
    let nats = place.nats();
    let Some(store) = rt.block_on(questions::kept_in(&state, nats.as_deref()))? else {
        if let ApprovalsCommand::List { .. } = command {
            // Nothing was ever asked here: an empty list.
            if json {
                writeln!(out, "[]")?;
            } else {
                writeln!(out, "no approval question is waiting")?;
            }
            return Ok(EXIT_OK);
        }
        return Err(ApprovalsError::NoQuestions(state));
    };
    match command {
        ApprovalsCommand::List { all, .. } => {
            let which = if *all { Listing::All } else { Listing::Waiting };
            let listed = rt.block_on(store.list(which))?;
            if json {
                serde_json::to_writer_pretty(&mut *out, &listed).map_err(std::io::Error::from)?;
                writeln!(out)?;
            } else if listed.is_empty() {
                writeln!(out, "no approval question is waiting")?;
            } else {
                let now = now_ms();
                for question in &listed {
                    writeln!(out, "{}", questions::describe(question, now))?;
                }
            }
            Ok(EXIT_OK)
        }
        ApprovalsCommand::Answer {
            id,
            decision,
            text,
            agent,
            ..
        } => {
            let decision = decision_of(*decision, text.as_deref())?;
            let outcome =
                rt.block_on(store.answer(id, agent.as_deref(), decision, "cli", now_ms()))?;
            if json {
                let (status, question) = match &outcome {
                    AnswerOutcome::Recorded(q) => ("recorded", q),
                    AnswerOutcome::AlreadyAnswered(q) => ("alreadyAnswered", q),
                    AnswerOutcome::Expired(q) => ("expired", q),
                };
                let value = serde_json::json!({"status": status, "question": question});
                writeln!(out, "{value}")?;
            }
            let answer = outcome.question().answer.as_ref();
            let said = answer.map(questions::answered).unwrap_or_default();
            let (line, code) = match &outcome {
                AnswerOutcome::Recorded(_) => (format!("{id}: {said}"), EXIT_OK),
                AnswerOutcome::AlreadyAnswered(_) => (
                    format!("{id} was answered already ({said}); the first answer stands"),
                    EXIT_FAILED,
                ),
                AnswerOutcome::Expired(_) => (
                    format!("{id} had expired: nobody answered it in time, so it is denied"),
                    EXIT_FAILED,
                ),
            };
            if !json {
                writeln!(out, "{line}")?;
            }
            Ok(code)
        }
    }
}

/// The decision `word` and its text make.
fn decision_of(word: AnswerWord, text: Option<&str>) -> Result<Decision, ApprovalsError> {
    Ok(match word {
        AnswerWord::Approve => Decision::Approve,
        AnswerWord::Deny => Decision::Deny {
            reason: text.unwrap_or_default().trim().to_owned(),
        },
        AnswerWord::Edit => {
            let text = text.ok_or_else(|| ApprovalsError::EditArgs("none given".to_owned()))?;
            let args: JsonObject =
                serde_json::from_str(text).map_err(|e| ApprovalsError::EditArgs(e.to_string()))?;
            Decision::ApproveWith(args)
        }
    })
}
