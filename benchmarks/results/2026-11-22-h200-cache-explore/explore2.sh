bin=.gpu-bundle/cargo-tune
run() { local name="$1"; shift; echo "== $name: $*"; /usr/bin/time -f "%e s" "$bin" chase "$@" 2>&1; }
run l2-size --path l2 --strides 128 --from 8MiB --to 256MiB --factor 1.06
run l2-sectors --path l2 --strides 32,64 --from 16MiB --to 128MiB --factor 1.12
run l2-lines --path l2 --strides 32,64,128,256,512,1KiB --from 128MiB --to 128MiB
run l1-ways --path l1 --carveout max-l1 --strides 2KiB,8KiB,16KiB,32KiB,64KiB --from 16KiB --to 4MiB --factor 1.06
run l1-default-fine --path l1 --carveout default --strides 128 --from 150KiB --to 256KiB --factor 1.01
