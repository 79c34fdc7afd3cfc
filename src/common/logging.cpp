#include "star/common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace star {

void init_logging(int rank, const std::string& level) {
  auto logger = spdlog::stderr_color_mt("rank" + std::to_string(rank));
  logger->set_pattern("[%H:%M:%S.%e] [rank " + std::to_string(rank) + "] [%^%l%$] %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace star
