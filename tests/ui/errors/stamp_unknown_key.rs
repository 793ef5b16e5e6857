// The one error is the macro's: the constant still has its type, so its use below is fine.
const VALUE: memtune::ProfileStamp = memtune::profile_stamp!(device = 0);

fn main() {
    let _ = VALUE;
}
