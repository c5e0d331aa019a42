// shmcpp: a C++ program (threads, exceptions, iostreams) that creates
// segments through shm_open, to show the shim keeps C++ programs working.
//   shmcpp PREFIX THREADS COUNT   thread t creates PREFIX<t>_0_<i>, then "ready"
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

static void create(const std::string &name)
{
	int fd = shm_open(("/" + name).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0 || ftruncate(fd, 4096) < 0)
		throw std::runtime_error("cannot create " + name);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		std::cerr << "usage: shmcpp PREFIX THREADS COUNT\n";
		return 2;
	}
	const std::string prefix = argv[1];
	const int threads = std::stoi(argv[2]), count = std::stoi(argv[3]);
	std::vector<std::thread> workers;
	std::vector<int> failed(threads, 0);

	for (int t = 0; t < threads; t++)
		workers.emplace_back([&, t] {
			try {
				for (int i = 0; i < count; i++)
					create(prefix + std::to_string(t) + "_0_" + std::to_string(i));
				create(prefix + std::to_string(t) + "_0_0"); // exists: throws
			} catch (const std::runtime_error &) {
				return; // the expected way out
			}
			failed[t] = 1;
		});
	for (auto &w : workers)
		w.join();
	for (int f : failed)
		if (f) {
			std::cerr << "shmcpp: a duplicate creation did not fail\n";
			return 1;
		}
	std::cout << "ready" << std::endl;
	std::string line;
	std::getline(std::cin, line);
	return 0;
}
