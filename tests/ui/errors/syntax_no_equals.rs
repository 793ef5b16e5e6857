// The one error is the macro's: the constant still has its type, so its use below is fine.
const VALUE: memtune::SamplingConsts = memtune::sampling_plan!(region 16 GiB, memory = device);

fn main() {
    let _ = VALUE;
}
