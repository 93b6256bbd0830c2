//! Connection-level commands: PING.

use super::{Args, Frame, ReplyError};

/// `PING [message]`: PONG, or the message back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ping {
    pub message: Option<Vec<u8>>,
}

impl Ping {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let mut words = args.rest();
        if words.len() > 1 {
            return Err(ReplyError(
                "ERR wrong number of arguments for 'ping' command".into(),
            ));
        }
        Ok(Ping { message: words.pop() })
    }

    pub(crate) fn apply(self) -> Frame {
        match self.message {
            None => Frame::SimpleString(b"PONG".to_vec()),
            Some(message) => Frame::BulkString(message),
        }
    }
}
