// MEMTUNE_PROFILE names a file of another schema (set by tests/tests/macros_ui.rs).
const VALUE: memtune::SamplingConsts = memtune::sampling_plan!(region = 1 GiB, memory = device);

fn main() {
    let _ = VALUE.passes;
}
