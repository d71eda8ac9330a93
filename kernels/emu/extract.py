# extract.py SRC.cu OUT.cpp -- rewrite a kernels/*.cu file for host compilation with cuda_emu.h:
# <<<grid, block, smem, stream>>>(args) -> emu_launch(kernel, grid, block, smem, args);
# extern __shared__ arrays -> the emulator buffer; device-only runtime calls removed.
import re, sys
src = open(sys.argv[1]).read()
src = src.replace('#include "kernel_common.cuh"', '#include "cuda_emu.h"\n#include "kernel_common.cuh"')
src = re.sub(r'extern __shared__ float (\w+)\[\];', r'float *\1 = pbk_emu_dyn_smem;', src)
src = src.replace('PBK_TRY(cudaGetDevice(&dev));', 'dev = 0;')
src = re.sub(r'PBK_TRY\(cudaFuncSetAttribute\([^;]*\);', '', src)
src = src.replace('smem_opt_in(kern, dev, smem)', 'PB_OK')   # no device limits to query
src = src.replace('PBK_LAUNCHED();', '')
def launch(m):
    fn, cfg, args = m.group(1), m.group(2), m.group(3)
    parts = [p.strip() for p in re.split(r',(?![^(]*\))', cfg)]
    while len(parts) < 3: parts.append('0')
    return 'emu_launch(%s, dim3(%s), %s, %s, %s);' % (fn, parts[0], parts[1], parts[2], args)
src = re.sub(r'([\w:]+(?:<[^<>;]*>)?)<<<(.*?)>>>\((.*?)\);', launch, src, flags=re.S)
open(sys.argv[2], 'w').write(src)
