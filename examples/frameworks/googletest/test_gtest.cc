// A GoogleTest suite of four tests with known, clearly different costs (1:2:3:4, about 1.5 s
// of CPU in all), two plain TESTs and two TEST_Fs. GoogleTest names a test "Suite.Name":
// ciprof should report "Hashing.Tiny", "Hashing.Small", "Mixing.Medium", "Mixing.Large".
// GoogleTest has no parallel mode; sharding (GTEST_TOTAL_SHARDS, GTEST_SHARD_INDEX) splits the
// tests among processes run side by side.
#include "fw_work.h"

#include <cstdint>
#include <string>
#include <gtest/gtest.h>

// The truth name of the running test, as GoogleTest itself spells it.
static std::string current_test()
{
	const testing::TestInfo *info = testing::UnitTest::GetInstance()->current_test_info();
	return std::string(info->test_suite_name()) + "." + info->name();
}

TEST(Hashing, Tiny)
{
	EXPECT_NE(fw_run_test(current_test().c_str(), 15), 0u);
}

TEST(Hashing, Small)
{
	EXPECT_NE(fw_run_test(current_test().c_str(), 30), 0u);
}

// Many suites live in an anonymous namespace: their TestBody is then
// "(anonymous namespace)::Mixing_Medium_Test::TestBody()".
namespace
{

class Mixing : public testing::Test
{
      protected:
	void SetUp() override
	{
		seed_ = 42;
	}
	uint64_t seed_ = 0;
};

TEST_F(Mixing, Medium)
{
	EXPECT_NE(fw_run_test(current_test().c_str(), 45), seed_);
}

TEST_F(Mixing, Large)
{
	EXPECT_NE(fw_run_test(current_test().c_str(), 60), seed_);
}

} // namespace
