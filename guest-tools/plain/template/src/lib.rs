#[allow(warnings)]
// Left as cargo-component generates it (not rustfmt-clean): the guest
// workspace's `cargo fmt --check` must not rewrite it.
#[rustfmt::skip]
mod bindings;

use bindings::Guest;

struct Component;

impl Guest for Component {
    /// Say hello!
    fn hello_world() -> String {
        "Hello, World!".to_string()
    }
}

bindings::export!(Component with_types_in bindings);
