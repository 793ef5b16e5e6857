// MEMTUNE_PROFILE names no file (set by tests/tests/macros_ui.rs).
const VALUE: memtune::SamplingConsts = memtune::sampling_plan!(region = 1 GiB, memory = device);

fn main() {
    let _ = VALUE.passes;
}
