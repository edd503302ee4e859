//! Answering a re-run call's questions from its sealed state
//! (`--state-key-file`): the guest asks again what it asked before the
//! call moved, and gets the user's answers back in order, without a pause.

use std::collections::VecDeque;

use serde_json::Value;

use crate::request_state::Answered;

/// The answers a call was given before it was re-run, and the ones it has
/// used since: what its next pause carries on.
#[derive(Debug, Default)]
pub struct AnswerBook {
    /// Answers not yet asked for again, in the order they were given.
    unread: VecDeque<Answered>,
    /// Answers used by this run, in order.
    read: Vec<Answered>,
}

impl AnswerBook {
    /// A book of `answers`, in the order the call asked for them.
    pub fn new(answers: Vec<Answered>) -> Self {
        AnswerBook { unread: answers.into(), read: Vec::new() }
    }

    /// The recorded answer to `question` (its digest), if it is the next
    /// question recorded. A different question ends the replay: the answers
    /// after it were given in a conversation that no longer happens, so they
    /// are dropped and the question goes to the user anew.
    pub fn answer(&mut self, question: &str) -> Option<Value> {
        let next = self.unread.pop_front()?;
        if next.question != question {
            self.unread.clear();
            return None;
        }
        let answer = next.answer.clone();
        self.read.push(next);
        Some(answer)
    }

    /// Records `answered` as used by this run: an answer that came up
    /// front, with the call, so a later pause's state carries it on.
    pub fn record(&mut self, answered: Answered) {
        self.read.push(answered);
    }

    /// The answers this run used, for the state of its next pause.
    pub fn read(&self) -> Vec<Answered> {
        self.read.clone()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answered(question: &str, n: i32) -> Answered {
        Answered { question: question.into(), answer: json!(n) }
    }

    #[test]
    fn answers_come_back_in_order_until_a_question_differs() {
        let mut book = AnswerBook::new(vec![answered("a", 1), answered("b", 2), answered("c", 3)]);
        assert_eq!(book.answer("a"), Some(json!(1)));
        assert_eq!(book.answer("x"), None, "a different question is asked anew");
        assert_eq!(book.answer("c"), None, "and what came after it is forgotten");
        assert_eq!(book.read(), vec![answered("a", 1)]);
    }
}
