//! Asking the user to approve a call: one form question, bounded by
//! `--approval-timeout`, whose only yes is an explicit one.

use rmcp::model::ElicitResult;

use super::CallChannel;
use super::question::{AskError, Question, Wait, form_params};
use crate::approval::{ApprovalQuestion, Decline, verdict};
use crate::cancellation::CallCancellation;

impl CallChannel {
    /// Asks the user to approve `question`. `Ok` only for an explicit yes;
    /// everything else (no, dismissed, no answer in time, cancelled, no way
    /// to ask) is the [`Decline`] saying why. Fails closed.
    pub async fn approve(
        &mut self,
        question: ApprovalQuestion,
        cancellation: &CallCancellation,
    ) -> Result<(), Decline> {
        // "asked" is counted where the question goes out (`put`): a re-run
        // call answered from its state was asked once, on another replica.
        let verdict = self.ask_approval(question, cancellation).await;
        self.stats.metrics().approval(match &verdict {
            Ok(()) => "approved",
            // The question travels in a sealed state; its verdict is
            // counted where the answer lands.
            Err(_) if self.handed_off() => "handed-off",
            Err(Decline::NoAnswer(_)) => "expired",
            Err(Decline::Cancelled) => "cancelled",
            Err(_) => "declined",
        });
        verdict
    }

    async fn ask_approval(
        &mut self,
        question: ApprovalQuestion,
        cancellation: &CallCancellation,
    ) -> Result<(), Decline> {
        if !self.may_ask(super::Capability::Form) {
            return Err(Decline::CannotAsk { tool: question.tool });
        }
        let params = form_params(question.message, ApprovalQuestion::requested_schema())
            .map_err(|err| Decline::Wording(err.to_string()))?;
        let wait = Wait { timeout: self.policy.approval_timeout, flag: "--approval-timeout", approval: true };
        let asking = self.put(Question::Elicit(Box::new(params)), cancellation, wait);
        // The question itself is a client span under the `approval` span.
        match super::answer::traced("elicitation/create", asking).await {
            Ok(answer) => match serde_json::from_value::<ElicitResult>(answer) {
                Ok(answer) => verdict(&answer),
                Err(err) => Err(Decline::Malformed(err.to_string())),
            },
            Err(AskError::TimedOut) => Err(Decline::NoAnswer(self.policy.approval_timeout)),
            Err(AskError::Cancelled) => Err(Decline::Cancelled),
            Err(AskError::Unsupported) => Err(Decline::NoClient),
            Err(other) => Err(Decline::Failed(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A call paused for its approval keeps this future for as long as the
    /// user takes, and 10 000 such calls may be held at once. Each way of
    /// asking is boxed where it is taken (`put_all`, `ask_in_task`), so
    /// none of them makes every approval larger: with a task's questions
    /// inline it was over 4 KiB.
    #[test]
    fn an_approval_keeps_little_room_while_it_waits() {
        let mut channel = CallChannel::detached(Arc::default());
        let cancellation = CallCancellation::new();
        let question = ApprovalQuestion { tool: "t".into(), message: "m".into() };
        let asking = channel.approve(question, &cancellation);
        let size = std::mem::size_of_val(&asking);
        assert!(size <= 1024, "the approval's future is {size} bytes");
    }
}
