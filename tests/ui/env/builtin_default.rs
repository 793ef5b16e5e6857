// No profile anywhere: the built-in default, with a warning (an error here) naming `cargo tune`.
#![deny(deprecated)]

const VALUE: memtune::SamplingConsts = memtune::sampling_plan!(region = 1 GiB, memory = device);

fn main() {
    let _ = VALUE.passes;
}
