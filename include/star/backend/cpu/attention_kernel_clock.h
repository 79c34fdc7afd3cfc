// Time inside the CPU attention kernel (attention_forward), for benchmarks that must tell attention
// apart from the rest of a model run. Off unless switched on; while off the kernel reads one flag
// per call and records nothing. A process-wide switch rather than a field of each call: the kernel
// is reached from every attention situation and engine path, and a benchmark wants all of them.
//
// Calls are booked by their query rows: more than one row is prefill (Phase 1 blocks and chunks,
// the query of Phase 2), one row is decode (a generated token). Each booking holds the calls, their
// wall seconds, and the Skip Softmax tiles the calls counted (the same pairs SkipSoftmaxTiles gets).
#pragma once

#include <cstdint>

#include "star/attention/skip_softmax.h"

namespace star::cpu {

struct AttentionKernelTime {
  int64_t calls = 0;
  double seconds = 0;
  SkipSoftmaxTiles tiles;
};

struct AttentionKernelClockReading {
  AttentionKernelTime prefill;  // calls with more than one query row
  AttentionKernelTime decode;   // calls with one query row
};

// Switching on or off clears what was booked.
void set_attention_kernel_clock(bool on);
bool attention_kernel_clock_on();
// What was booked since the clock was switched on or last reset.
AttentionKernelClockReading read_attention_kernel_clock();
void reset_attention_kernel_clock();

// The kernel's booking of one call (only while the clock is on).
void book_attention_kernel_call(int64_t query_rows, double seconds, SkipSoftmaxTiles tiles);

}  // namespace star::cpu
