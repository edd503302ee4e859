//! A plain WASI component for the host's tests (issue 25): it knows nothing
//! of the `mcp:tool` contract. The host makes a tool of each exported
//! function, with a JSON Schema derived from its WIT types, so this world
//! exports one function per kind of WIT type (each returns its arguments
//! unchanged, so a test sees the round trip), plus functions that fail,
//! never return, trap, or reach a granted file, the network or the config.
//! The `counters` interface has a resource, whose functions the host must
//! leave out.

// The generated `Guest` trait mirrors `integers`, which has eight parameters.
#[allow(clippy::too_many_arguments, reason = "the WIT signature under test has eight parameters")]
mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "plain-types",
        // The wasi:config/store import is generated here too.
        generate_all,
    });
}

use bindings::exports::example::plain_types::counters;
use bindings::wasi::config::store;
use bindings::{Color, Perms, Point, Shape};

struct Component;

impl bindings::Guest for Component {
    fn echo(text: String) -> String {
        text
    }

    fn integers(
        a: u8,
        b: i8,
        c: u16,
        d: i16,
        e: u32,
        f: i32,
        g: u64,
        h: i64,
    ) -> (u8, i8, u16, i16, u32, i32, u64, i64) {
        (a, b, c, d, e, f, g, h)
    }

    fn floats(a: f32, b: f64) -> (f32, f64) {
        (a, b)
    }

    fn text(c: char, s: String) -> (char, String) {
        (c, s)
    }

    fn bytes(data: Vec<u8>) -> Vec<u8> {
        data
    }

    fn lists(words: Vec<String>, matrix: Vec<Vec<i32>>) -> (Vec<String>, Vec<Vec<i32>>) {
        (words, matrix)
    }

    fn options(a: Option<String>, b: Option<Option<u32>>) -> (Option<String>, Option<Option<u32>>) {
        (a, b)
    }

    fn shapes(p: Point, s: Shape, c: Color, f: Perms) -> (Point, Shape, Color, Perms) {
        (p, s, c, f)
    }

    fn divide(a: i64, b: i64) -> Result<i64, String> {
        // checked_div: also an error for i64::MIN / -1, which would trap.
        a.checked_div(b).ok_or_else(|| if b == 0 { "division by zero".into() } else { "overflow".into() })
    }

    fn nothing() {}

    fn spin() -> u64 {
        // black_box keeps the optimizer from proving the loop has no effect
        // and removing it: the call must burn fuel and time until stopped.
        let mut count: u64 = 0;
        loop {
            count = std::hint::black_box(count.wrapping_add(1));
        }
    }

    fn crash() -> String {
        // With panic = "abort" (the workspace's release profile) a panic is
        // a wasm trap.
        unreachable!("plain-types crashes on purpose")
    }

    fn read_file(path: String) -> Result<String, String> {
        std::fs::read_to_string(path).map_err(|err| err.to_string())
    }

    fn fetch(url: String) -> Result<String, String> {
        http_get(&url)
    }

    fn config(key: String) -> Option<String> {
        // An error from the store reads as unset: the WIT says none.
        store::get(&key).ok().flatten()
    }
}

/// The resource behind `counters.counter`: a number fixed at construction.
struct Counter {
    value: u32,
}

impl counters::GuestCounter for Counter {
    fn new(start: u32) -> Self {
        Counter { value: start }
    }

    fn get(&self) -> u32 {
        self.value
    }
}

impl counters::Guest for Component {
    type Counter = Counter;

    fn make(start: u32) -> counters::Counter {
        counters::Counter::new(Counter { value: start })
    }

    fn describe() -> String {
        "Counters: `make` returns a handle, so only `describe` is a tool".into()
    }
}

/// `GET url` through `wasi:http/outgoing-handler`: the whole body as text
/// on a 2xx status, an error naming the status (and the body) otherwise,
/// or the error the host gave.
fn http_get(url: &str) -> Result<String, String> {
    use wasi::http::outgoing_handler;
    use wasi::http::types::{Fields, OutgoingRequest, Scheme};
    use wasi::io::streams::StreamError;

    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err(format!("{url}: only http:// and https:// URLs")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    let set = request.set_scheme(Some(&scheme)).is_ok()
        && request.set_authority(Some(authority)).is_ok()
        && request.set_path_with_query(Some(path)).is_ok();
    if !set {
        return Err(format!("{url}: the host rejected the URL"));
    }
    let failed = |what: String| format!("fetch {url} failed: {what}");
    let pending = outgoing_handler::handle(request, None).map_err(|code| failed(format!("{code:?}")))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(failed(format!("{code:?}"))),
        Some(Err(())) | None => return Err(failed("the response was not available".into())),
    };
    let status = response.status();
    let body = response.consume().map_err(|()| failed("no body".into()))?;
    let mut bytes = Vec::new();
    {
        // The stream is a child of the body: it must be dropped first.
        let stream = body.stream().map_err(|()| failed("no body stream".into()))?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(err)) => return Err(failed(err.to_debug_string())),
            }
        }
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if !(200..300).contains(&status) {
        return Err(failed(format!("status {status}: {text}")));
    }
    Ok(text)
}

bindings::export!(Component with_types_in bindings);
