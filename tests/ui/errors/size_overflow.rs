// The one error is the macro's: the constant still has its type, so its use below is fine.
const VALUE: memtune::SamplingConsts = memtune::sampling_plan!(region = 99999999999 TiB, memory = device);

fn main() {
    let _ = VALUE;
}
