//! Connection- and server-level commands: PING, WAIT.

use super::{Args, Frame, ReplyError, request};

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

/// `WAIT numreplicas timeout`: blocks until that many replicas acknowledged this
/// connection's writes, or the timeout (ms, 0 = forever) passes; replies with the count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub replicas: i64,
    pub timeout_ms: i64,
}

impl Wait {
    pub(crate) fn parse(args: &mut Args) -> Result<Self, ReplyError> {
        let replicas = args.next_int()?;
        let timeout_ms = args.next_int()?;
        if timeout_ms < 0 {
            return Err(ReplyError("ERR timeout is negative".into()));
        }
        Ok(Wait { replicas, timeout_ms })
    }

    /// The request frame a client sends.
    pub fn into_frame(self) -> Frame {
        request([
            b"WAIT".to_vec(),
            self.replicas.to_string().into_bytes(),
            self.timeout_ms.to_string().into_bytes(),
        ])
    }
}
