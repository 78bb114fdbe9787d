// Emulation shim for CUDA's cuda_bf16.h: see tl_emu_fp.h.
#pragma once
#include "tl_emu_fp.h"
