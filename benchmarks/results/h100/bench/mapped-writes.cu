// How fast SMs write and read mapped pinned host memory, sequentially, against the copy engine.
#include <cuda_runtime.h>
#include <cstdio>
#define CK(x) do { cudaError_t e=(x); if(e!=cudaSuccess){printf("%s: %s\n",#x,cudaGetErrorString(e)); return 1;} } while(0)
struct B { unsigned key, count; };
__global__ void fill(B* t, unsigned long long n) {
  for (unsigned long long i = blockIdx.x*(unsigned long long)blockDim.x+threadIdx.x; i<n; i+=(unsigned long long)gridDim.x*blockDim.x) { t[i].key=0xffffffffu; t[i].count=0; }
}
__global__ void fill2(uint2* t, unsigned long long n) {
  for (unsigned long long i = blockIdx.x*(unsigned long long)blockDim.x+threadIdx.x; i<n; i+=(unsigned long long)gridDim.x*blockDim.x) t[i]=make_uint2(0xffffffffu,0);
}
__global__ void sum(const B* t, unsigned long long n, unsigned long long* out) {
  unsigned long long s=0;
  for (unsigned long long i = blockIdx.x*(unsigned long long)blockDim.x+threadIdx.x; i<n; i+=(unsigned long long)gridDim.x*blockDim.x) { B b=t[i]; s+=b.key+b.count; }
  atomicAdd(out,s);
}
int main(int argc,char**argv){
  size_t bytes=(size_t)atoll(argc>1?argv[1]:"4294967296"); unsigned long long n=bytes/8;
  B* h; CK(cudaHostAlloc(&h,bytes,cudaHostAllocMapped)); B* d; CK(cudaHostGetDevicePointer(&d,h,0));
  void* dev; CK(cudaMalloc(&dev,256<<20)); unsigned long long* out; CK(cudaMalloc(&out,8));
  cudaEvent_t a,b; cudaEventCreate(&a); cudaEventCreate(&b); float ms;
  int sms; cudaDeviceGetAttribute(&sms,cudaDevAttrMultiProcessorCount,0);
  for (int grid : {sms*4, sms*32, 65535}) for(int rep=0;rep<2;rep++){
    cudaEventRecord(a); fill<<<grid,256>>>(d,n); cudaEventRecord(b); CK(cudaEventSynchronize(b)); cudaEventElapsedTime(&ms,a,b);
    printf("fill   grid %6d: %8.1f ms, %6.1f GB/s\n",grid,ms,bytes/ms/1e6);
    cudaEventRecord(a); fill2<<<grid,256>>>((uint2*)d,n); cudaEventRecord(b); CK(cudaEventSynchronize(b)); cudaEventElapsedTime(&ms,a,b);
    printf("fill2  grid %6d: %8.1f ms, %6.1f GB/s\n",grid,ms,bytes/ms/1e6);
    cudaEventRecord(a); sum<<<grid,256>>>(d,n,out); cudaEventRecord(b); CK(cudaEventSynchronize(b)); cudaEventElapsedTime(&ms,a,b);
    printf("read   grid %6d: %8.1f ms, %6.1f GB/s\n",grid,ms,bytes/ms/1e6);
  }
  cudaEventRecord(a); for(size_t o=0;o<bytes;o+=(256<<20)) CK(cudaMemcpyAsync((char*)h+o,dev,(256<<20),cudaMemcpyDeviceToHost)); cudaEventRecord(b); CK(cudaEventSynchronize(b)); cudaEventElapsedTime(&ms,a,b);
  printf("copy engine DtoH: %8.1f ms, %6.1f GB/s\n",ms,bytes/ms/1e6);
  cudaEventRecord(a); for(size_t o=0;o<bytes;o+=(256<<20)) CK(cudaMemcpyAsync(dev,(char*)h+o,(256<<20),cudaMemcpyHostToDevice)); cudaEventRecord(b); CK(cudaEventSynchronize(b)); cudaEventElapsedTime(&ms,a,b);
  printf("copy engine HtoD: %8.1f ms, %6.1f GB/s\n",ms,bytes/ms/1e6);
  cudaEventRecord(a); for(size_t o=0;o<bytes;o+=(256<<20)) CK(cudaMemcpyAsync((char*)d+o,dev,(256<<20),cudaMemcpyDeviceToDevice)); cudaEventRecord(b); CK(cudaEventSynchronize(b)); cudaEventElapsedTime(&ms,a,b);
  printf("DtoD to the mapped pointer: %8.1f ms, %6.1f GB/s\n",ms,bytes/ms/1e6);
  return 0;
}
