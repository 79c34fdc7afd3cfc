// star-bench model: prefill and decode speed of the CPU backend on one model, against the sgemm
// rate and copy bandwidth measured on the same machine.
#pragma once

namespace star::bench {

int run_model_command(int argc, char** argv);

}  // namespace star::bench
