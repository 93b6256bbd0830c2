//! Why a request did not become a command: not a command at all ([`ParseError`]), or
//! refused, and at which stage INFO's statistics count it ([`Refused`]).

use super::error::ReplyError;

/// Why a frame is not a command at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The frame is not an array of bulk strings: Redis closes such connections.
    Protocol(String),
    /// A well-formed request Redis answers with an error reply.
    Reply(ReplyError),
}

/// A request that did not become a command, and how INFO commandstats counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub error: ReplyError,
    pub stage: Stage,
}

/// Where a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before it ran (`rejected_calls`): its name, arity, the password, subscribed mode,
    /// MULTI, a replica's or a master's refusal of writes. `credited` unless Redis did not
    /// find the command (an unknown command or subcommand).
    Rejected { credited: bool },
    /// By its own checks of its arguments as it ran: a call that failed.
    Ran,
}

impl Refused {
    pub(super) fn rejected(error: ReplyError, credited: bool) -> Self {
        Refused {
            error,
            stage: Stage::Rejected { credited },
        }
    }

    /// A refusal by the command's arguments: Redis finds an unknown subcommand (or a
    /// subcommand's wrong word count) as it looks the command up, the rest as it runs.
    pub(super) fn by_arguments(error: ReplyError) -> Self {
        if error.is_found_at_lookup() {
            let credited = !error.is_unknown_subcommand();
            return Refused::rejected(error, credited);
        }
        Refused {
            error,
            stage: Stage::Ran,
        }
    }
}

impl From<ReplyError> for ParseError {
    fn from(e: ReplyError) -> Self {
        ParseError::Reply(e)
    }
}
