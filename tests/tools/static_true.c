/* A statically linked program, for `shmguard doctor --binary` to refuse. */
int main(void)
{
	return 0;
}
