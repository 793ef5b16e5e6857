// The one error is the macro's: the constant still has its type, so its use below is fine.
const VALUE: memtune::SamplingConsts = memtune::sampling_plan!(region = 1 GiB, memory = host);

fn main() {
    let _ = VALUE;
}
