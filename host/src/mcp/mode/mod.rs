//! The three ways a call travels, by what the client speaks. Each file
//! reads top to bottom, from the request to the response:
//!
//! - [`request`]: inside its request (up to protocol 2025-11-25); questions
//!   to the user are requests to the client, withdrawn if the call stops;
//! - [`rounds`]: in a task of its own that a chain of requests drives
//!   (2026-07-28); a question pauses the call, parked here under a lease or
//!   sealed into its `requestState` (`--state-key-file`);
//! - [`task`]: as a task (the tasks extension); the call answers with the
//!   task at once, and questions show as `input_required`.

pub(super) mod request;
pub(super) mod rounds;
pub(super) mod task;
