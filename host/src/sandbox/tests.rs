//! The sandbox against real wasmtime: the host's engine and stores.

use super::*;
use crate::engine::{EngineSettings, Tier, build_engine};
use guest_pool::SHORT_CALL;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

/// The host's engine, with small limits.
fn engine(tier: Tier) -> Engine {
    let settings = EngineSettings {
        max_memory: 64 << 20,
        max_stack: 512 << 10,
        max_concurrent_calls: 2,
        fuel_metering: false,
    };
    build_engine(&settings, tier).unwrap()
}

fn budget() -> StoreBudget {
    StoreBudget {
        fuel: None,
        max_memory: 64 << 20,
        max_handles: 16,
        time_limit: Duration::from_secs(5),
        max_guest_output: 1 << 10,
    }
}

struct Data(Sandbox);
impl SandboxView for Data {
    fn sandbox(&mut self) -> &mut Sandbox {
        &mut self.0
    }
}

/// `release` closes what the call held at once, while the store lives
/// on to be dropped later: the handles in its table, and the granted
/// directory its WASI context opened.
#[cfg(target_os = "linux")]
#[test]
fn release_closes_the_calls_handles_and_its_directories() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    let mut grants =
        Grants::new(vec![path.display().to_string().parse().unwrap()], vec![], Default::default());
    grants.capture().unwrap();
    let open_on_dir = || {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .filter(|target| *target == path)
            .count()
    };
    let before = open_on_dir();
    let mut sandbox = Sandbox::new(&grants, &budget(), "test".into()).unwrap();
    assert_eq!(open_on_dir(), before + 1, "the call's WASI context opens the grant");
    struct Handle(Arc<AtomicBool>);
    impl Drop for Handle {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let closed = Arc::new(AtomicBool::new(false));
    sandbox.table().push(Handle(closed.clone())).unwrap();
    sandbox.release();
    assert!(closed.load(Ordering::Relaxed), "the guest's handle was closed");
    assert_eq!(open_on_dir(), before, "the grant's handle was closed");
}

/// A call's guest runs through epoch ticks for its first `SHORT_CALL`,
/// then yields at the next one: the host's engine and store, a guest
/// that never returns, and the epoch bumped every 20 µs from another
/// thread (as a cancel's `interrupt_guests` does), so without the rule
/// the guest would yield within microseconds.
#[tokio::test]
async fn a_call_runs_through_its_first_short_call_then_yields() {
    let engine = engine(Tier::Optimized);
    let wat = r#"(component
        (core module $m (func (export "spin") (loop br 0)))
        (core instance $i (instantiate $m))
        (func (export "spin") (canon lift (core func $i "spin"))))"#;
    let component = wasmtime::component::Component::new(&engine, wat::parse_str(wat).unwrap()).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let ticker = std::thread::spawn({
        let (engine, done) = (engine.clone(), done.clone());
        move || {
            while !done.load(Ordering::Relaxed) {
                engine.increment_epoch();
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    });
    let pool = guest_pool::GuestPool::start(&crate::engine::Epochs::new(&engine)).unwrap();
    for _ in 0..5 {
        let budget = budget();
        let sandbox = Sandbox::new(&Grants::default(), &budget, "test".into()).unwrap();
        let mut store = new_store(&engine, Data(sandbox), &budget).unwrap();
        let linker = wasmtime::component::Linker::<Data>::new(&engine);
        let instance = linker.instantiate_async(&mut store, &component).await.unwrap();
        let spin = instance.get_typed_func::<(), ()>(&mut store, "spin").unwrap();
        // As a call runs its guest: in a `GuestTask`, polled here first.
        let entered = Instant::now();
        let mut call = pool.spawn(async move { spin.call_async(&mut store, ()).await.is_ok() });
        let first_yield = std::future::poll_fn(|cx| match Pin::new(&mut call).poll(cx) {
            Poll::Pending => Poll::Ready(entered.elapsed()),
            Poll::Ready(_) => panic!("spin returned"),
        })
        .await;
        assert!(first_yield >= SHORT_CALL, "yielded after {first_yield:?}, within its first {SHORT_CALL:?}");
        // And it does yield after that, with room for a busy machine.
        assert!(first_yield < Duration::from_secs(1), "yielded only after {first_yield:?}");
        call.stop().await;
    }
    done.store(true, Ordering::Relaxed);
    ticker.join().unwrap();
}

/// Real wasmtime, the host's own engine and store: two instances of a
/// module each grow their own memory, and the second growth past the
/// call's budget fails (before, each memory had the whole budget). The
/// same on baseline (Winch) code as on optimized code.
#[tokio::test]
async fn two_memories_of_one_call_share_its_budget() {
    for tier in [Tier::Optimized, Tier::Baseline] {
        two_memories_share_the_budget_on(tier).await;
    }
}

async fn two_memories_share_the_budget_on(tier: Tier) {
    let engine = engine(tier);
    let wat = r#"(component
        (core module $m
            (memory 1)
            (func (export "grow") (param i32) (result i32) local.get 0 memory.grow))
        (core instance $a (instantiate $m))
        (core instance $b (instantiate $m))
        (func (export "grow-a") (param "pages" u32) (result s32) (canon lift (core func $a "grow")))
        (func (export "grow-b") (param "pages" u32) (result s32) (canon lift (core func $b "grow"))))"#;
    let component = wasmtime::component::Component::new(&engine, wat::parse_str(wat).unwrap()).unwrap();
    let budget = budget();
    let sandbox = Sandbox::new(&Grants::default(), &budget, "test".into()).unwrap();
    let mut store = new_store(&engine, Data(sandbox), &budget).unwrap();
    let linker = wasmtime::component::Linker::<Data>::new(&engine);
    let instance = linker.instantiate_async(&mut store, &component).await.unwrap();
    let grow_a = instance.get_typed_func::<(u32,), (i32,)>(&mut store, "grow-a").unwrap();
    let grow_b = instance.get_typed_func::<(u32,), (i32,)>(&mut store, "grow-b").unwrap();
    // 40 MiB in the first memory fits (it returns the old size in pages)...
    assert_eq!(grow_a.call_async(&mut store, (640,)).await.unwrap(), (1,));
    // ...and 40 MiB more in the second does not: -1, the budget is spent.
    assert_eq!(grow_b.call_async(&mut store, (640,)).await.unwrap(), (-1,));
    assert_eq!(store.data_mut().sandbox().memory_was_hit(), Some(MemoryHit::Call));
}
