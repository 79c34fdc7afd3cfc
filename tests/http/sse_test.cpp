// SSE framing of the stream chunks.
#include <gtest/gtest.h>

#include "star/http/sse.h"

namespace star::http {
namespace {

TEST(Sse, EventIsOneDataLineEndedByABlankLine) {
  const std::string event = sse_event({{"text", "two\nlines"}});
  EXPECT_EQ(event, "data: {\"text\":\"two\\nlines\"}\n\n");
  EXPECT_EQ(std::string(kSseDone), "data: [DONE]\n\n");
}

TEST(Sse, InvalidUtf8IsReplacedNotThrown) {
  const std::string event = sse_event({{"text", std::string("a\xff" "b")}});
  EXPECT_EQ(event, "data: {\"text\":\"a\xEF\xBF\xBD" "b\"}\n\n");
}

}  // namespace
}  // namespace star::http
