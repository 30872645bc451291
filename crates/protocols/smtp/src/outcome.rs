//! What happened to one mail transaction, recipient by recipient.

use peakhour_net::Timed;

use crate::reply::Reply;

/// The result of MAIL FROM, RCPT TO ×n and DATA.
///
/// Every reply is a [`Timed`] whose `elapsed` runs from the start of the
/// transaction's first write to the moment the reply arrived. In lock-step the
/// differences between consecutive replies are the per-command times; with
/// PIPELINING they are the arrival times of the replies to one write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionOutcome {
    /// True if MAIL, RCPT and DATA went in one write (the server offers
    /// PIPELINING).
    pub pipelined: bool,
    /// The reply to MAIL FROM (always a success: a refusal is an error).
    pub mail: Timed<Reply>,
    /// One entry per recipient, in the order given.
    pub recipients: Vec<RecipientOutcome>,
    /// The reply to DATA; `None` when DATA was not sent because no recipient
    /// was accepted.
    pub data: Option<Timed<Reply>>,
    /// SMTP only: the reply after the final dot, which applies to every
    /// accepted recipient. LMTP gives one per recipient instead, in
    /// [`RecipientOutcome::delivery`].
    pub message: Option<Timed<Reply>>,
    /// The reply to the RSET sent because no recipient was accepted.
    pub reset: Option<Timed<Reply>>,
}

/// What happened to one recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecipientOutcome {
    /// The address, as given to the transaction.
    pub address: String,
    /// The reply to its RCPT TO.
    pub rcpt: Timed<Reply>,
    /// The reply after the final dot that decided this recipient's delivery:
    /// its own reply in LMTP (RFC 2033), the message's single reply in SMTP.
    /// `None` if it was refused at RCPT (or no body was sent).
    pub delivery: Option<Timed<Reply>>,
}

impl RecipientOutcome {
    /// True if the server accepted the recipient at RCPT TO.
    pub fn accepted(&self) -> bool {
        self.rcpt.value.is_positive_completion()
    }

    /// True if the server took responsibility for delivering to this
    /// recipient (a 2yz reply after the final dot).
    pub fn delivered(&self) -> bool {
        self.delivery
            .as_ref()
            .is_some_and(|reply| reply.value.is_positive_completion())
    }
}

impl TransactionOutcome {
    /// How many recipients were accepted at RCPT TO.
    pub fn accepted_count(&self) -> usize {
        self.recipients.iter().filter(|r| r.accepted()).count()
    }

    /// How many recipients the server took the message for.
    pub fn delivered_count(&self) -> usize {
        self.recipients.iter().filter(|r| r.delivered()).count()
    }

    /// True if the message was taken for every recipient.
    pub fn all_delivered(&self) -> bool {
        self.recipients.iter().all(RecipientOutcome::delivered)
    }
}
