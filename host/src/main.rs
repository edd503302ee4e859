//! The `mcp-wasm-host` binary: everything is in [`mcp_wasm_host::binary`].

fn main() {
    mcp_wasm_host::binary::main()
}
