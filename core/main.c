/* main.c - placeholder until the server core lands. */
int main(void) { return 0; }
